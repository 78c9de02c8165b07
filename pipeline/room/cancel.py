"""Echo cancellation: our own playback taken out of the microphone's audio.

The echo guard (pipeline.room.echo) decides which frames are our voice coming back; it
cannot separate a user who talks over the reply from the reply under their words, so a
talk-over is confirmed late (the guard doubts the frames our echo explains) and Whisper
hears both voices. A canceller subtracts the echo instead: an adaptive filter learns the
way from the loudspeaker to the microphone (delay, loss, the room's colour) and takes its
prediction out of every microphone frame, leaving the user. The guard then judges what
is left, and learns how little of our voice still comes back.

A canceller needs both streams on one sample clock: each 10 ms of microphone audio is
processed after exactly 10 ms of what was played (silence when nothing was), as an audio
device calls it. `Cancellation` keeps that pairing for a server, where the reply frames
leave on one clock and the microphone frames arrive on another: what was played waits
in a queue, and each microphone frame takes the next 10 ms of it. The queue is bounded:
a microphone that stops (a satellite between turns) does not make the echo path look
seconds long when it comes back.

Where no echo comes back (headphones, a browser that cancelled it already) the room does
not use the canceller's output: AEC3, never having found an echo path, suppresses
whatever the microphone hears while something plays — a user talking over the reply,
20-40 dB under the echo-free input, was taken down to -95 dBFS (offline, the embedded
voice). The room keeps a second echo guard on the audio as it came, and uses the
cancelled audio only until that guard has learned that nothing comes back.

The canceller itself (WebRTC's AEC3) lives in models/echo_cancel.py behind this Protocol.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

import numpy as np

from pipeline.audio import frames
from pipeline.events import FRAME_SAMPLES, Pcm

SUB_FRAME = FRAME_SAMPLES // 2
"""10 ms at 16 kHz: the frame an echo canceller works on."""
MAX_QUEUED_S = 1.0
"""What was played may wait this long for the microphone frames it pairs with."""


class EchoCanceller(Protocol):
    """One stream's echo canceller (it learns that stream's echo path: one per stream)."""

    def render(self, pcm: Pcm) -> None:
        """10 ms of 16 kHz mono int16 that the loudspeaker plays (the far end)."""
        ...

    def capture(self, pcm: Pcm) -> Pcm:
        """10 ms of the microphone (the near end), the echo taken out."""
        ...

    def close(self) -> None:
        """Free what it holds (idempotent)."""
        ...


class Cancellation:
    """Pairs what was played with what the microphone hears, 10 ms for 10 ms."""

    def __init__(self, canceller: EchoCanceller, max_queued_s: float = MAX_QUEUED_S) -> None:
        self.canceller = canceller
        self._played: deque[Pcm] = deque(maxlen=max(1, int(max_queued_s * 100)))
        self._silence = np.zeros(SUB_FRAME, np.int16)
        self.dropped = 0
        """10 ms frames of playback dropped unpaired (the microphone fell behind)."""
        self.closed = False

    def played(self, pcm: Pcm) -> None:
        """A frame of our own audio left for the loudspeaker."""
        for half in frames(pcm, SUB_FRAME, last="keep"):
            if len(self._played) == self._played.maxlen:
                self.dropped += 1
            self._played.append(half.astype(np.int16, copy=False))

    def cancel(self, pcm: Pcm) -> Pcm:
        """A microphone frame with our echo taken out (the same length)."""
        if self.closed:
            return pcm
        out = []
        for half in frames(pcm, SUB_FRAME, last="keep"):
            far = self._played.popleft() if self._played else self._silence
            self.canceller.render(_padded(far))
            out.append(self.canceller.capture(_padded(half))[: len(half)])
        result: Pcm = np.concatenate(out).astype(np.int16, copy=False)
        return result

    def forget(self) -> None:
        """Drop the playback waiting to be paired (it was not played into a room)."""
        self._played.clear()

    @property
    def queued_ms(self) -> int:
        """Playback waiting for its microphone frames."""
        return len(self._played) * 10

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._played.clear()
            self.canceller.close()


def _padded(pcm: Pcm) -> Pcm:
    if len(pcm) == SUB_FRAME:
        return pcm
    out = np.zeros(SUB_FRAME, np.int16)
    out[: len(pcm)] = pcm[:SUB_FRAME]
    return out
