"""TTS: Piper, one clause in, 16 kHz int16 audio chunks out.

Piper speaks at its voice's rate (22.05 kHz for the default voice); audio is resampled to
the pipeline's 16 kHz here, at the edge, with soxr.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from pipeline.audio import StreamResampler, to_int16
from pipeline.events import SAMPLE_RATE, Pcm

if TYPE_CHECKING:
    from piper import PiperVoice


class Synthesizer(Protocol):
    """Text → 16 kHz mono int16 chunks. Blocking: iterate it inside a model worker."""

    voice_id: str

    def synthesize(self, text: str) -> Iterator[Pcm]: ...


@dataclass(frozen=True, kw_only=True)
class TtsOptions:
    length_scale: float | None = None
    """Speaking rate: < 1 is faster, > 1 slower (None: the voice's own setting)."""
    volume: float = 0.8
    """Piper normalises each sentence to full scale; this leaves headroom."""
    trim_lead: bool = True
    """Drop the near-silence Piper puts before a clause (30-65 ms measured with the default
    voice): every millisecond of it is added to time-to-first-audio."""


class PiperSynthesizer:
    def __init__(self, voice: PiperVoice, voice_id: str, options: TtsOptions | None = None) -> None:
        from piper import SynthesisConfig

        self.voice = voice
        self.voice_id = voice_id
        self.options = options or TtsOptions()
        self._config = SynthesisConfig(
            length_scale=self.options.length_scale, volume=self.options.volume
        )

    @property
    def native_rate(self) -> int:
        return int(self.voice.config.sample_rate)

    def synthesize(self, text: str) -> Iterator[Pcm]:
        lead = self.options.trim_lead
        for pcm in self._chunks(text):
            if lead:
                start = first_sound(pcm)
                if start is None:
                    continue
                pcm, lead = pcm[max(0, start - LEAD_KEPT) :], False
            yield pcm

    def _chunks(self, text: str) -> Iterator[Pcm]:
        resampler = StreamResampler(self.native_rate, SAMPLE_RATE)
        for chunk in self.voice.synthesize(text, syn_config=self._config):
            out = resampler.push(chunk.audio_float_array)
            if out.size:
                yield to_int16(out)
        tail = resampler.push(_EMPTY, last=True)
        if tail.size:
            yield to_int16(tail)


SOUND_LEVEL = 100
"""Samples above this (-50 dBFS) are sound; Piper's lead-in sits below it."""
LEAD_KEPT = SAMPLE_RATE * 5 // 1000
"""Audio kept before the first sound (5 ms), so the onset is not clipped."""


def first_sound(pcm: Pcm, level: int = SOUND_LEVEL) -> int | None:
    """Index of the first sample louder than `level`, or None if there is none."""
    loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > level)
    return int(loud[0]) if loud.size else None


_EMPTY = np.zeros(0, np.float32)
