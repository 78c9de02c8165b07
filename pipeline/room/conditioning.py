"""Input conditioning: noise suppression (and optionally gain) before anything listens.

A browser does this itself when the page asks getUserMedia for noiseSuppression (and says
so); raw audio (`apace talk`, Wyoming satellites, Realtime clients, the bench's client)
arrives as the microphone heard it. Conditioning runs per stream, on 10 ms frames of
16 kHz audio, the way WebRTC's own processing does. The models live in models/denoise.py
behind this Protocol; cost per frame is measured there (`measure_cost`).
"""

from __future__ import annotations

import time
from typing import Protocol

import numpy as np

from pipeline.events import FRAME_SAMPLES, Pcm

SUB_FRAME = FRAME_SAMPLES // 2
"""10 ms at 16 kHz: the frame size noise suppressors are built for."""


class Conditioner(Protocol):
    """One stream's noise suppressor: keeps state across frames, so one per stream."""

    def process(self, pcm: Pcm) -> Pcm:
        """10 ms of 16 kHz mono int16 in, the same length out."""
        ...


def condition(conditioner: Conditioner, pcm: Pcm) -> Pcm:
    """A 20 ms pipeline frame through a 10 ms conditioner."""
    halves = [conditioner.process(pcm[i : i + SUB_FRAME]) for i in range(0, len(pcm), SUB_FRAME)]
    out: Pcm = np.concatenate(halves).astype(np.int16, copy=False)
    return out


def measure_cost(conditioner: Conditioner, pcm: Pcm) -> float:
    """CPU milliseconds per 10 ms frame to condition `pcm` (process time, this thread)."""
    frames = [pcm[i : i + SUB_FRAME] for i in range(0, len(pcm) - SUB_FRAME + 1, SUB_FRAME)]
    start = time.thread_time()
    for frame in frames:
        conditioner.process(frame)
    return (time.thread_time() - start) * 1000 / max(1, len(frames))
