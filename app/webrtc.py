"""WebRTC audio at the edge: browser mic → pipeline frames, speaker → outbound track.

aiortc delivers s16 stereo 48 kHz frames of 960 samples; the pipeline wants 16 kHz mono
int16 in 20 ms frames. PyAV's resampler converts, and a small buffer re-cuts the result.
"""

from __future__ import annotations

import asyncio
import fractions
import logging
from collections.abc import AsyncIterator

import av
import numpy as np
from aiortc import MediaStreamTrack, RTCPeerConnection
from aiortc.mediastreams import MediaStreamError

from pipeline.events import FRAME_MS, FRAME_SAMPLES, SAMPLE_RATE, AudioFrame
from pipeline.speaker import Speaker
from pipeline.timeline import now

log = logging.getLogger(__name__)


def shorten_jitter_buffer(pc: RTCPeerConnection, track: MediaStreamTrack, prefetch: int) -> None:
    """Hold fewer mic packets before decoding than aiortc's fixed 4 (~80-100 ms).

    Every packet held is latency before the endpointer even hears the end of speech; on
    loopback and LANs reordering is rare, so 2 is enough. aiortc has no setting for it,
    hence the private attribute; if aiortc renames it this does nothing (logged).
    """
    from aiortc.jitterbuffer import JitterBuffer

    for transceiver in pc.getTransceivers():
        receiver = transceiver.receiver
        if receiver.track is track and hasattr(receiver, "_RTCRtpReceiver__jitter_buffer"):
            receiver._RTCRtpReceiver__jitter_buffer = JitterBuffer(capacity=16, prefetch=prefetch)
            return
    log.warning("could not shorten the jitter buffer (aiortc changed?)")


async def mic_frames(track: MediaStreamTrack, idle_timeout: float) -> AsyncIterator[AudioFrame]:
    """The browser's microphone as 20 ms pipeline frames; ends when the track does, or
    when no audio arrives for `idle_timeout` seconds (a peer that went silent)."""
    resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
    pending = np.zeros(0, np.int16)
    while True:
        try:
            frame = await asyncio.wait_for(track.recv(), idle_timeout)
        except (MediaStreamError, TimeoutError):
            return
        for out in resampler.resample(frame):  # type: ignore[arg-type]
            pending = np.concatenate([pending, out.to_ndarray().reshape(-1).astype(np.int16)])
        while len(pending) >= FRAME_SAMPLES:
            pcm, pending = pending[:FRAME_SAMPLES], pending[FRAME_SAMPLES:]
            yield AudioFrame(pcm, now())


class SpeakerTrack(MediaStreamTrack):
    """Outbound audio: one 20 ms frame per call, self-paced; silence when idle.

    Pacing follows aiortc's own tracks: wait until `start + pts / rate`, not a blind
    sleep, so the stream never drifts. `Speaker.clear()` drops queued audio at once.
    """

    kind = "audio"

    def __init__(self, speaker: Speaker) -> None:
        super().__init__()
        self.speaker = speaker
        self._start: float | None = None
        self._pts = 0
        self._silence = np.zeros(FRAME_SAMPLES, np.int16)

    async def recv(self) -> av.AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        loop = asyncio.get_running_loop()
        if self._start is None:
            self._start = loop.time()
        else:
            self._pts += FRAME_SAMPLES
            wait = self._start + self._pts / SAMPLE_RATE - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            elif wait < -FRAME_MS / 1000 * 10:  # stalled (loop was busy): resync, no burst
                self._start = loop.time() - self._pts / SAMPLE_RATE
        pcm = self.speaker.pop()
        frame = av.AudioFrame.from_ndarray(
            (self._silence if pcm is None else pcm).reshape(1, -1), format="s16", layout="mono"
        )
        frame.sample_rate = SAMPLE_RATE
        frame.pts = self._pts
        frame.time_base = fractions.Fraction(1, SAMPLE_RATE)
        return frame
