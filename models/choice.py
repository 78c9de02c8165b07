"""Which LLM and ears apace serves, why, and how to change it.

Each model is the first of: a flag, an environment variable, the config file ([models] in
$XDG_CONFIG_HOME/apace/config.toml: docs/configuration.md), the best tier `apace models pull`
stored (models.catalog.PREFERRED, the order `make run` follows), the embedded package.
models.locate resolves the LLM and the ear; the noisy-room ear is resolved here. `apace
serve` opens with `Choice.line()` for each, and `apace doctor` reports the same choices.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from models.catalog import preferred
from models.locate import SPECS, Located, ModelError, Origin, config_path, configured_model, resolve

log = logging.getLogger(__name__)

AUTO = "auto"
NOISY_ASR_ENV = "APACE_NOISY_ASR"
NOISY_ASR_TIER = "whisper-base"
"""The noisy-room ear by default, where it is pulled: in background talk and pink noise
the room bench heard 18 and 10 % WER with it, 27 and 16 % with tiny.en (docs/rooms.md)."""


def noisy_setting(value: str | None) -> tuple[str | None, Origin, str]:
    """The noisy-room ear's setting (a tier, a folder, "off", None or AUTO), what set it, and
    that as a source: `value` (the --noisy-asr flag) unless it is AUTO, then
    $APACE_NOISY_ASR, then the config file's [models] noisy_asr, else AUTO."""
    if value != AUTO:
        return value, "flag", "flag --noisy-asr"
    if env := os.environ.get(NOISY_ASR_ENV):
        return env, "env", f"env {NOISY_ASR_ENV}"
    if configured := configured_model("noisy_asr"):
        return configured, "config", f"config {config_path()}"
    return AUTO, "best pulled", f"pulled tier {NOISY_ASR_TIER}"


def locate_noisy_asr(value: str | None, ear: Located) -> Located | None:
    """The noisy-room ear's model (ModelChoice.noisy_asr, as `noisy_setting` reads it), or
    None for one ear: "off", None, AUTO with NOISY_ASR_TIER not pulled (logged), or the same
    model as `ear`. A name or folder that cannot be used is a ModelError."""
    setting, origin, source = noisy_setting(value)
    if setting is None or setting == "off":
        return None
    if setting != AUTO:
        key = "noisy_asr" if origin == "config" else None
        found = resolve("asr", setting, origin, source, key=key)
    else:
        try:
            found = resolve("asr", NOISY_ASR_TIER, "best pulled", source)
        except ModelError as error:
            log.info("no noisy-room ear (%s): every room is heard by the one ear", error)
            return None
    return None if found.path.resolve() == ear.path.resolve() else found


@dataclass(frozen=True, kw_only=True)
class Choice:
    """One model that is served: what it is, why this one, and how to choose another."""

    role: str
    """"LLM", "ASR" or "noisy-room ASR"."""
    model: str
    """A tier's name, else the path; "off" or "none" for no noisy-room ear."""
    why: str
    change: str

    def line(self) -> str:
        return f"{self.role}: {self.model} ({self.why}; change: {self.change})"


_ROLES = {"llm": ("LLM", "--llm TIER or --llm-model GGUF"),
          "asr": ("ASR", "--asr TIER or --asr-model DIR"),
          "noisy_asr": ("noisy-room ASR", "--noisy-asr TIER|DIR|off")}


def choices(located: dict[str, Located], noisy: str | None = AUTO, *, gpu: bool = False
            ) -> list[Choice]:
    """The LLM, the ear and the noisy-room ear in `located` (ModelChoice.resolve's), with
    `noisy` the --noisy-asr value they were resolved with, and `gpu` whether the best pulled
    tiers were taken in the GPU order."""
    return [_choice("llm", located["llm"], gpu=gpu), _choice("asr", located["asr"], gpu=gpu),
            noisy_choice(located["asr"], located.get("noisy_asr"), noisy)]


def noisy_choice(ear: Located, found: Located | None, noisy: str | None = AUTO) -> Choice:
    """The noisy-room ear `found` (locate_noisy_asr's, with `noisy` the --noisy-asr value)
    beside the ear `ear`; when there is none, why not."""
    if found is not None:
        return _choice("noisy_asr", found)
    setting, origin, _ = noisy_setting(noisy)
    role, flag = _ROLES["noisy_asr"]
    change = f"{flag}, or {_config_line('noisy_asr')}"
    if setting is None or setting == "off":
        return Choice(role=role, model="off", why=_why(origin, "noisy_asr"), change=change)
    if setting != AUTO or ear.tier == NOISY_ASR_TIER:
        return Choice(role=role, model="none", why="the same model as the ASR", change=change)
    return Choice(role=role, model="none", why=f"{NOISY_ASR_TIER} is not pulled: every room "
                  "is heard by the one ear", change=f"apace models pull {NOISY_ASR_TIER}")


def _choice(key: str, found: Located, *, gpu: bool = False) -> Choice:
    role, flag = _ROLES[key]
    order = preferred("llm" if key == "llm" else "asr", gpu=gpu)
    best = order[0]
    change = f"{flag}, or {_config_line(key)}"
    why = _why(found.origin, key)
    if found.origin == "embedded" and found.tier != best:
        why = f"embedded fallback: {best}, preferred, is not pulled"
        change = f"apace models pull {best}; {change}"
    elif found.origin == "embedded":
        why = "the preferred tier, embedded"
    elif found.origin == "best pulled":
        why = f"best pulled tier, in the {'GPU ' if gpu else ''}order {' > '.join(order)}"
        if key == "noisy_asr":
            why = "pulled, the noisy-room ear by default"
    return Choice(role=role, model=found.tier or str(found.path), why=why, change=change)


def _why(origin: Origin, key: str) -> str:
    env = NOISY_ASR_ENV if key == "noisy_asr" else SPECS["llm" if key == "llm" else "asr"].env
    return {"flag": "flag", "env": f"env {env}", "config": f"config file {config_path()}",
            "best pulled": "best pulled tier", "embedded": "embedded"}[origin]


def _config_line(key: str) -> str:
    return f'{key} = "TIER" under [models] in {config_path()}'
