"""TTS: what a conversation needs of a voice (`Synthesizer`: one clause in, 16 kHz int16
audio chunks out), its options, and where a clause's sound starts. The Piper adapter is
models/piper.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from pipeline.events import SAMPLE_RATE, Pcm


class Synthesizer(Protocol):
    """Text → 16 kHz mono int16 chunks. Blocking: iterate it inside a model worker."""

    voice_id: str

    def synthesize(self, text: str) -> Iterator[Pcm]: ...


@runtime_checkable
class Tuned(Protocol):
    """A Synthesizer whose `options` (pace, variation) shape its audio: the same clause
    under other options is other audio (pipeline.answer.caches keys on them)."""

    options: object


@dataclass(frozen=True, kw_only=True)
class TtsOptions:
    """How Piper speaks a clause. What trimming and streaming buy: docs/latency.md."""

    length_scale: float | None = None
    """Speaking rate: < 1 is faster, > 1 slower (None: the voice's own setting)."""
    variation: bool = True
    """Piper's random variation (its noise scales; default True): off, a text is spoken the
    same every time (tests that hear the voice assert on fixed audio)."""
    volume: float = 0.8
    """Piper normalises each sentence to full scale; this leaves headroom."""
    trim_lead: bool = True
    """Drop the near-silence Piper puts before a clause, which would add to the time to
    first audio (default True)."""
    stream: bool = True
    """Split the voice at its decoder and send audio as it is decoded (default True;
    models/piper_stream.py). False: Piper's whole-sentence synthesis (`--no-tts-stream`)."""


SOUND_LEVEL = 100
"""Samples above this (-50 dBFS) are sound; Piper's lead-in sits below it."""
LEAD_KEPT = SAMPLE_RATE * 5 // 1000
"""Audio kept before the first sound (5 ms), so the onset is not clipped."""


def first_sound(pcm: Pcm, level: int = SOUND_LEVEL) -> int | None:
    """Index of the first sample louder than `level`, or None if there is none."""
    loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > level)
    return int(loud[0]) if loud.size else None
