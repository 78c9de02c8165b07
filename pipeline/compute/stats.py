"""Counters the engine keeps for the dashboard and /metrics (one instance per engine).

Plain numbers updated on the event loop; `snapshot()` is what readers take.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    entries: int = 0
    bytes: int = 0

    @property
    def hit_rate(self) -> float | None:
        total = self.hits + self.misses
        return self.hits / total if total else None


@dataclass
class SpeculationStats:
    started: int = 0
    committed: int = 0
    cancelled: int = 0
    wasted_tokens: int = 0
    wasted_ms: float = 0.0
    reheard: int = 0
    """Speculations whose turn was transcribed again after late voice in the pause."""
    kept: int = 0
    """Of those, kept: the same words (the late voice was the room's)."""


@dataclass
class DraftStats:
    proposed: int = 0
    accepted: int = 0

    @property
    def acceptance(self) -> float | None:
        return self.accepted / self.proposed if self.proposed else None


@dataclass
class EngineStats:
    turns: int = 0
    barge_ins: int = 0
    llm_tokens: int = 0
    llm_seconds: float = 0.0
    speculation: SpeculationStats = field(default_factory=SpeculationStats)
    tts_cache: CacheStats = field(default_factory=CacheStats)
    reply_cache: CacheStats = field(default_factory=CacheStats)
    draft: DraftStats = field(default_factory=DraftStats)
    asr_batches: int = 0
    """Transcription batches of more than one job (pipeline/listen/ear.py)."""
    asr_batched_jobs: int = 0
    """Jobs that ran in those batches."""
    noisy_ear_replies: int = 0
    """Replies (speculative ones included) whose turn the noisy-room ear heard, and
    Wyoming transcriptions (speculative ones included) it made."""
    heard_again: int = 0
    """Finished turns a skill answered from the second ear's words: the first ear's went
    to no skill (pipeline.answer.second_hearing)."""
    holds: int = 0
    """Replies held (gone quiet) at the first sign of the user talking over them."""
    holds_released: int = 0
    """Of those, let go on: the speech stopped short of a barge-in."""
    degraded: dict[str, int] = field(default_factory=dict)
    """Finished turns that gave something up under load, by kind (pipeline.compute.degrade)."""

    def snapshot(self) -> dict[str, Any]:
        out = asdict(self)
        out["tts_cache"]["hit_rate"] = self.tts_cache.hit_rate
        out["reply_cache"]["hit_rate"] = self.reply_cache.hit_rate
        out["draft"]["acceptance"] = self.draft.acceptance
        out["llm_tokens_per_s"] = (
            self.llm_tokens / self.llm_seconds if self.llm_seconds > 0 else None
        )
        return out
