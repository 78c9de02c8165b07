"""Input conditioning: noise suppression (and optionally gain) before anything listens.

A browser does this itself when the page asks getUserMedia for noiseSuppression (and says
so); raw audio (`apace talk`, Wyoming satellites, Realtime clients, the bench's client)
arrives as the microphone heard it. Conditioning runs per stream, on 10 ms frames of
16 kHz audio, the way WebRTC's own processing does. The models live in models/denoise.py
behind this Protocol; cost per frame is measured there (`measure_cost`).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Protocol

import numpy as np

from pipeline.audio import frames, rms_dbfs
from pipeline.events import FRAME_SAMPLES, Pcm
from pipeline.room.levels import RoomLevel

SUB_FRAME = FRAME_SAMPLES // 2
"""10 ms at 16 kHz: the frame size noise suppressors are built for."""


class Conditioner(Protocol):
    """One stream's noise suppressor: keeps state across frames, so one per stream."""

    def process(self, pcm: Pcm) -> Pcm:
        """10 ms of 16 kHz mono int16 in, the same length out."""
        ...


def condition(conditioner: Conditioner, pcm: Pcm) -> Pcm:
    """A 20 ms pipeline frame through a 10 ms conditioner."""
    halves = [conditioner.process(half) for half in frames(pcm, SUB_FRAME, last="keep")]
    out: Pcm = np.concatenate(halves).astype(np.int16, copy=False)
    return out


NOISY_ROOM_DB = -50.0
"""The room's raw level (dBFS RMS, median of the frames heard while nobody had the floor)
from which suppression is applied. Below it there is little noise to take out, and
suppressing clean audio cost Whisper tiny.en words (quality bench, clean raw audio: 13-15
mishearings with suppression against ~6 without: "Take bread off" → "Take red off"). A
laptop microphone in a quiet room hears -60 to -55; a fan, pink noise 10 dB under the
voice or white noise 25 dB under it arrive at -45 to -30."""


class Suppression:
    """Whether one raw stream's frames go out noise-suppressed: only in a noisy room.

    Decided on the raw audio (suppressed audio would make every room look quiet), only
    between utterances (a turn is never half suppressed), with a few dB of hysteresis.
    Until anything is known it is on, as for any raw stream; the suppressor is fed every
    frame either way, so its noise estimate is current when it is switched on."""

    def __init__(self, threshold_db: float = NOISY_ROOM_DB, hysteresis_db: float = 3.0) -> None:
        self.threshold_db = threshold_db
        self.hysteresis_db = hysteresis_db
        self.on = True
        self.room = RoomLevel(min_frames=25)
        self._early: deque[float] = deque(maxlen=50)
        self.raw_db = -120.0
        """The level of the last raw frame."""

    def hear(self, pcm: Pcm) -> float:
        """A raw frame came in: its level (dBFS)."""
        self.raw_db = rms_dbfs(pcm)
        if not self.room.known:
            self._early.append(self.raw_db)
        return self.raw_db

    def decide(self) -> bool:
        """Between utterances: on or off for what comes next, from the room's median (or,
        before the room is known, the quietest tenth of what was heard so far)."""
        if self.room.known:
            level = self.room.median_db
        elif len(self._early) >= 10:
            level = float(np.percentile(np.fromiter(self._early, float), 10))
        else:
            return self.on
        if self.on and level < self.threshold_db - self.hysteresis_db:
            self.on = False
        elif not self.on and level >= self.threshold_db:
            self.on = True
        return self.on


def measure_cost(conditioner: Conditioner, pcm: Pcm) -> float:
    """CPU milliseconds per 10 ms frame to condition `pcm` (process time, this thread)."""
    whole = list(frames(pcm, SUB_FRAME, last="drop"))
    start = time.thread_time()
    for frame in whole:
        conditioner.process(frame)
    return (time.thread_time() - start) * 1000 / max(1, len(whole))
