"""The sound of a timer ringing: two soft rising tones, twice (pure numpy, made once)."""

from __future__ import annotations

import functools

import numpy as np

from pipeline.events import SAMPLE_RATE, Pcm

_TONES_HZ = (880.0, 1318.5)  # A5 then E6: a fifth up, the usual "ding-dong" of a kitchen timer
_TONE_S = 0.16
_GAP_S = 0.04
_LEVEL = 0.3  # about -10 dBFS peak: clearly heard, not louder than the voice


@functools.cache
def chime() -> Pcm:
    """~0.8 s of chime, 16 kHz mono int16, with 10 ms fades so it does not click."""
    t = np.arange(int(_TONE_S * SAMPLE_RATE)) / SAMPLE_RATE
    fade = np.minimum(1.0, np.minimum(t, _TONE_S - t) / 0.01)
    decay = np.exp(-3.0 * t / _TONE_S)
    gap = np.zeros(int(_GAP_S * SAMPLE_RATE))
    parts: list[np.ndarray] = []
    for _ in range(2):
        for hz in _TONES_HZ:
            parts += [np.sin(2 * np.pi * hz * t) * fade * decay * _LEVEL, gap]
        parts.append(np.zeros(int(0.1 * SAMPLE_RATE)))
    audio: Pcm = (np.concatenate(parts) * 32767).astype(np.int16)
    audio.flags.writeable = False
    return audio
