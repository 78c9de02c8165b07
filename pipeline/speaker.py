"""The outbound audio queue: reply audio waits here in 20 ms frames for the transport.

The transport (a WebRTC track, or a file writer in `apace talk`) pops one frame per 20 ms
and sends silence when the queue is empty. `clear()` drops everything queued at once
(barge-in); `hold()` keeps it but plays nothing till `release()` (the user may be talking
over the reply: pipeline.conversation decides whether it was a barge-in). Each frame can
carry a callback run when the frame is popped — the moment its audio leaves the server —
which is how replies learn what was actually played.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from pipeline.audio import frames
from pipeline.events import FRAME_SAMPLES, Pcm

OnPlayed = Callable[[int], None]
"""Called with the number of real (not padding) samples in the frame that left."""


class Speaker:
    def __init__(self) -> None:
        self._frames: deque[tuple[Pcm, int, OnPlayed | None]] = deque()
        self._interjected = 0
        """Frames at the front of the queue that were interjected (a timer ringing)."""
        self.played: Callable[[Pcm], None] | None = None
        """Told of every frame as it leaves: what the room hears (the echo reference)."""
        self.held = False
        """True between `hold()` and `release()` (or `clear()`): nothing leaves."""

    def push(self, pcm: Pcm, on_played: OnPlayed | None = None) -> None:
        """Queue audio; a trailing part under 20 ms is padded with silence."""
        self._frames.extend(_frames(pcm, on_played))

    def interject(self, pcm: Pcm) -> None:
        """Play `pcm` next, ahead of queued reply audio (which resumes after it), behind
        earlier interjections: a timer rings on time even while a reply is playing."""
        frames = _frames(pcm, None)
        self._frames.rotate(-self._interjected)
        self._frames.extendleft(reversed(frames))
        self._frames.rotate(self._interjected)
        self._interjected += len(frames)

    def pop(self) -> Pcm | None:
        """The next frame to send, or None when there is nothing to say (or it is held)."""
        if not self._frames or self.held:
            return None
        frame, real, on_played = self._frames.popleft()
        self._interjected = max(0, self._interjected - 1)
        if on_played is not None:
            on_played(real)
        if self.played is not None:
            self.played(frame)
        return frame

    def clear(self) -> int:
        """Drop all queued reply audio now (interjections stay); returns how many frames
        were dropped."""
        dropped = len(self._frames) - self._interjected
        for _ in range(dropped):
            self._frames.pop()
        self.held = False
        return dropped

    def hold(self) -> None:
        """Play nothing from now on, keeping what is queued, until `release()`: the reply
        goes quiet at the first sign of the user talking over it and, if that was a
        cough, goes on from the frame it stopped at."""
        self.held = True

    def release(self) -> None:
        self.held = False

    @property
    def queued_frames(self) -> int:
        return len(self._frames)


def _frames(pcm: Pcm, on_played: OnPlayed | None) -> list[tuple[Pcm, int, OnPlayed | None]]:
    """`pcm` as 20 ms frames, each with its real (not padding) length."""
    return [(frame, min(FRAME_SAMPLES, len(pcm) - k * FRAME_SAMPLES), on_played)
            for k, frame in enumerate(frames(pcm))]
