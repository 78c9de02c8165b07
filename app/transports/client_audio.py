"""What every test client of apace shares, whatever its transport (WebRTC, Realtime,
Wyoming): the microphone's queue of audio to send, the reply audio as it arrived, and
waiting for one of the server's events. No transport of its own, so each transport's
client imports it and none imports another's.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.audio import frames, rms_dbfs
from pipeline.events import FRAME_SAMPLES, Pcm
from pipeline.timeline import now

ENERGY_DBFS = -45.0
"""Reply audio louder than this counts as audible (Opus silence sits far below)."""


class MicQueue:
    """Audio waiting to leave as a microphone sends it: frames of `frame_samples`, the
    last one padded; silence when nothing waits."""

    def __init__(self, frame_samples: int = FRAME_SAMPLES) -> None:
        self.frame_samples = frame_samples
        self._queue: deque[tuple[Pcm, asyncio.Future[float] | None]] = deque()

    def say(self, pcm: Pcm, mark_sample: int | None = None) -> asyncio.Future[float]:
        """Queue `pcm` to be sent from the next frame on.

        The future resolves to the time the frame holding `mark_sample` (default: the
        last sample) left — e.g. the true end of speech in `pcm`.
        """
        mark = asyncio.get_running_loop().create_future()
        mark_frame = (len(pcm) - 1 if mark_sample is None else mark_sample) // self.frame_samples
        for index, frame in enumerate(frames(pcm, self.frame_samples)):
            self._queue.append((frame, mark if index == mark_frame else None))
        return mark

    @property
    def idle(self) -> bool:
        return not self._queue

    def pop(self) -> Pcm:
        """The frame that leaves now (silence if none waits); resolves its mark."""
        if not self._queue:
            return np.zeros(self.frame_samples, np.int16)
        pcm, mark = self._queue.popleft()
        if mark is not None and not mark.done():
            mark.set_result(now())
        return pcm


@dataclass
class Received:
    """Reply audio as it arrived: (arrival time, dBFS) per 20 ms of audio."""

    levels: list[tuple[float, float]] = field(default_factory=list)

    def hear(self, pcm: Pcm, at: float, frame_samples: int = FRAME_SAMPLES) -> None:
        """Reply audio that arrived at `at`: one level per 20 ms (a short last frame is
        measured as it is)."""
        for frame in frames(pcm, frame_samples, last="keep"):
            self.levels.append((at, rms_dbfs(frame)))

    def first_audible_after(self, t: float, threshold: float = ENERGY_DBFS) -> float | None:
        return next((at for at, db in self.levels if at >= t and db > threshold), None)

    def last_audible(self, threshold: float = ENERGY_DBFS) -> float | None:
        return next((at for at, db in reversed(self.levels) if db > threshold), None)

    def audible_between(self, start: float, end: float, threshold: float = ENERGY_DBFS) -> bool:
        return any(start <= at < end and db > threshold for at, db in self.levels)


async def wait_event(events: list[dict[str, Any]], new_event: asyncio.Event, kind: str, *,
                     after: int = 0, timeout: float = 30.0) -> dict[str, Any]:
    """The first event of `kind` in `events` at index ≥ `after`, waiting for it (each
    client sets `new_event` when it appends one)."""
    async with asyncio.timeout(timeout):
        while True:
            for event in events[after:]:
                if event["type"] == kind:
                    return event
            new_event.clear()
            await new_event.wait()
