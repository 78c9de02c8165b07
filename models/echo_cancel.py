"""WebRTC's echo canceller (AEC3) for raw microphone audio (pipeline.room.cancel).

AEC3 is the canceller every Chrome call runs: a delay estimator that finds the echo path
(up to several hundred ms, and follows it when it moves), an adaptive linear filter, and a
suppressor for what the filter leaves. It comes from the `livekit` wheel, whose native
library carries WebRTC's audio processing module; apace uses that module alone (no
LiveKit server, no network). One instance per stream, 16 kHz, 10 ms frames.

Measured offline on this 2-core box (a Piper reply heard back 10 dB down, a user talking
over it; docs/rooms.md: 51-62 dB less echo with a plain delayed echo (150-500
ms), 28-31 dB through a reverberant room (RT60 0.3 s) with a saturating loudspeaker; the
user's speech over the echo kept within 1-2 dB; ~0.1 ms of CPU per 10 ms frame.
Speex's canceller (pyaec) on the same audio: 3-10 dB, and the user 3-7 dB down.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from models.locate import ModelError
from pipeline.events import SAMPLE_RATE, Pcm
from pipeline.room.cancel import SUB_FRAME

INSTALL = "pip install 'apace-voice[aec]' (or: pip install livekit)"


def load_canceller() -> Aec3:
    """A fresh canceller for one stream (ModelError names the package if it is missing)."""
    return Aec3()


class Aec3:
    """WebRTC AEC3 with its high-pass filter (the canceller works better without rumble)."""

    def __init__(self) -> None:
        try:
            from livekit.rtc import AudioFrame
            from livekit.rtc.apm import AudioProcessingModule
        except ImportError:
            raise ModelError(f"echo cancellation needs the livekit package: {INSTALL}") from None
        self._frame: Any = AudioFrame
        self._apm: Any = AudioProcessingModule(echo_cancellation=True, high_pass_filter=True)

    def render(self, pcm: Pcm) -> None:
        frame = self._make(pcm)
        self._apm.process_reverse_stream(frame)

    def capture(self, pcm: Pcm) -> Pcm:
        frame = self._make(pcm)
        self._apm.process_stream(frame)
        return np.frombuffer(frame.data, np.int16).copy()

    def close(self) -> None:
        apm, self._apm = self._apm, None
        if apm is not None:
            apm._ffi_handle.dispose()  # noqa: SLF001

    def _make(self, pcm: Pcm) -> Any:
        if self._apm is None:
            raise RuntimeError("the echo canceller was closed")
        return self._frame(pcm.astype("<i2").tobytes(), SAMPLE_RATE, 1, SUB_FRAME)
