"""Real-time pacing of outgoing audio: one schedule for every sender.

Every sender of audio at the pace it plays — the server's reply track, the bench client's
microphone, the Realtime and Wyoming bench clients, `apace talk`, the Realtime transport's
replies — lets frame n leave at `start + n · frame`, the way aiortc's own audio track waits
for `start + pts / rate` rather than sleeping a fixed time, so the stream never drifts.

A frame that is due late (the event loop was busy) leaves at once and the next ones catch
up, but only up to `stall_s` behind: after a longer stall the schedule restarts from now.
Catching up on a whole stall would burst it onto the receiver — a jitter buffer that then
holds the burst as latency, an endpointer that hears seconds of audio in an instant.

`Pacer` is the arithmetic (no clock, no I/O); `FrameClock` waits on it and numbers the
frames (pts) for a stream (app.transports.webrtc.tracks.audio_frame stamps them for aiortc).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from pipeline.events import FRAME_MS, SAMPLE_RATE
from pipeline.timeline import now

STALL_S = 0.2
"""How far behind schedule a sender still catches up (10 frames of 20 ms)."""


@dataclass
class Pacer:
    """When the next frame may leave: on one schedule from the first frame of a stretch
    of audio (no drift), at most `lead_s` ahead of real time.

    A sender that stops when it has nothing to send (the Realtime transport) calls
    `idle()`, and its next audio starts a new schedule at once.
    """

    lead_s: float = 0.0
    """How far ahead of real time frames may leave (absorbs the receiver's jitter)."""
    frame_s: float = FRAME_MS / 1000
    stall_s: float = STALL_S
    _start: float | None = field(default=None, init=False)
    _sent: int = field(default=0, init=False)

    def wait_s(self, now: float) -> float:
        """Seconds until the next frame may be sent (0: now)."""
        if self._start is None:
            return 0.0
        return max(0.0, self._start + self._sent * self.frame_s - self.lead_s - now)

    def sent(self, now: float) -> None:
        """A frame left at `now`."""
        if self._start is None:
            self._start = now
        elif now - (self._start + self._sent * self.frame_s) > self.stall_s:
            self._start = now - self._sent * self.frame_s  # stalled: resync, no burst
        self._sent += 1

    def idle(self) -> None:
        """Nothing to send: the next frame starts a new schedule."""
        self._start = None
        self._sent = 0

    @property
    def running(self) -> bool:
        return self._start is not None


class FrameClock:
    """The beat of a continuous real-time audio stream of `rate` Hz: `tick()` returns when
    the next frame of `frame_samples` (default 20 ms) is due, with its pts.

    The pts counts samples from the stream's start in units of 1/rate s, so a 16 kHz 20 ms
    stream steps by 320 (aiortc's Opus encoder rescales that to 960 at 48 kHz); it stays
    continuous across a stall, as the audio does.
    """

    def __init__(self, rate: int = SAMPLE_RATE, frame_samples: int | None = None, *,
                 stall_s: float = STALL_S, clock: Callable[[], float] = now,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.rate = rate
        self.frame_samples = rate * FRAME_MS // 1000 if frame_samples is None else frame_samples
        self._pacer = Pacer(frame_s=self.frame_samples / rate, stall_s=stall_s)
        self._clock = clock
        self._sleep = sleep
        self._pts = 0

    async def tick(self) -> int:
        """Wait until the next frame is due; its pts. Safe to cancel: a cancelled tick
        neither counts a frame nor moves the schedule."""
        if (wait := self._pacer.wait_s(self._clock())) > 0:
            await self._sleep(wait)
        self._pacer.sent(self._clock())
        pts, self._pts = self._pts, self._pts + self.frame_samples
        return pts
