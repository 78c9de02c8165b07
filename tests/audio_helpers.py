"""Synthetic audio shared by the unit tests."""

from __future__ import annotations

import numpy as np

from pipeline.events import FRAME_SAMPLES, Pcm


class Noise:
    """20 ms white-noise frames at a chosen level: `noise(-40)` is a frame whose RMS is
    -40 dB relative to 32767. One seeded generator per test module, so a module's frames
    are the same on every run."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def __call__(self, level_db: float) -> Pcm:
        frame = self._rng.standard_normal(FRAME_SAMPLES) * 10 ** (level_db / 20) * 32767
        pcm: Pcm = np.clip(frame, -32768, 32767).astype(np.int16)
        return pcm
