"""The microphone's timeline: when each heard frame was captured, on the server's clock
(pipeline.room.echo looks for our echo at played time + delay on it); and whether played
frames are being played at all."""

from __future__ import annotations

import logging
from collections import deque

from pipeline.events import FRAME_MS

REANCHOR_S = 0.1
REANCHOR_HOLD_S = 0.3
"""MicClock: how far behind its timeline, for how long, before it starts again."""
BURST_S = 0.005
BURST_FRAMES = 25
"""Frames popped back to back (each within BURST_S of the last): a transport draining
replies (a Realtime client taking text only), not playing them. A sender catching up
after a stalled loop pops up to ~11 (app.transports.pacing resyncs after 200 ms): 12 was too near."""
BURST_OFF_S = 10.0

log = logging.getLogger("pipeline.room.echo")


class PopClock:
    """When played frames were popped: in a burst (BURST_FRAMES back to back) they are not
    being played into a room, and the echo guard stands down for BURST_OFF_S."""

    def __init__(self) -> None:
        self._quick = 0
        self._last = -1.0
        self._off_until = -1.0

    def pop(self, t: float) -> bool:
        """A frame was popped at `t`; True while a burst goes on."""
        self._quick = self._quick + 1 if t - self._last < BURST_S else 0
        self._last = t
        if self._quick < BURST_FRAMES:
            return False
        if self.live(t):
            log.debug("echo guard: played frames came in a burst; standing down")
        self._off_until = t + BURST_OFF_S
        return True

    def live(self, t: float) -> bool:
        """Frames popped at `t` are being played (no burst for BURST_OFF_S)."""
        return t >= self._off_until


class MicClock:
    """Smooths microphone frame times: frames arrive in bursts behind a jitter buffer,
    but each is 20 ms of audio, so the least-delayed arrivals define the timeline.

    Frames that never arrive (a sender that stalled and started again from now, packets
    lost) put every later one behind that timeline for good: once they have all been more
    than REANCHOR_S behind it for REANCHOR_HOLD_S of arrivals, the timeline starts again
    from them (else our echo was looked for up to 5 s too early). A burst after a stalled
    loop (everything late, then caught up) is over long before that."""

    def __init__(self, frames: int = 250) -> None:
        self._offsets: deque[float] = deque(maxlen=frames)
        self._n = 0
        self._behind_since: float | None = None

    def tick(self, t: float) -> float:
        step = self._n * FRAME_MS / 1000
        offset = t - step
        self._offsets.append(offset)
        self._n += 1
        if offset - min(self._offsets) <= REANCHOR_S:
            self._behind_since = None
        elif self._behind_since is None:
            self._behind_since = t
        elif t - self._behind_since >= REANCHOR_HOLD_S:
            self._offsets.clear()
            self._offsets.append(offset)
            self._behind_since = None
        return min(self._offsets) + step
