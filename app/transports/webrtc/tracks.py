"""WebRTC audio at the edge: browser mic → pipeline frames, speaker → outbound track.

aiortc delivers s16 stereo 48 kHz frames of 960 samples; the pipeline wants 16 kHz mono
int16 in 20 ms frames. PyAV's resampler converts, and a small buffer re-cuts the result.
The speaker track paces itself on app.transports.pacing's schedule.
"""

from __future__ import annotations

import asyncio
import fractions
import logging
from collections.abc import AsyncIterator

import av
import numpy as np
from aiortc import MediaStreamTrack, RTCPeerConnection
from aiortc.jitterbuffer import JitterBuffer, JitterFrame
from aiortc.mediastreams import MediaStreamError

from app.transports.pacing import FrameClock
from pipeline.audio import FrameCutter
from pipeline.events import FRAME_SAMPLES, SAMPLE_RATE, AudioFrame, Pcm
from pipeline.speaker import Speaker
from pipeline.timeline import now

log = logging.getLogger(__name__)


def shorten_jitter_buffer(pc: RTCPeerConnection, track: MediaStreamTrack, hold: int) -> None:
    """Give the mic track a PacketJitterBuffer instead of aiortc's (4 packets, ~80-100 ms).

    Every packet held is latency before the endpointer even hears the end of speech.
    aiortc has no setting for it, hence the private attribute; if aiortc renames it this
    does nothing (logged).
    """
    for transceiver in pc.getTransceivers():
        receiver = transceiver.receiver
        if receiver.track is track and hasattr(receiver, "_RTCRtpReceiver__jitter_buffer"):
            receiver._RTCRtpReceiver__jitter_buffer = PacketJitterBuffer(hold)  # noqa: SLF001
            return
    log.warning("could not shorten the jitter buffer (aiortc changed?)")


class PacketJitterBuffer(JitterBuffer):
    """An audio jitter buffer that holds a packet only while an earlier one is missing.

    aiortc's buffer releases a frame once a packet of the *next* frame arrives (for video,
    that is how it knows a frame's packets are all in): for audio that is one packet
    (20 ms) of latency on every frame, even at prefetch 1. An Opus frame is one RTP packet,
    so here a packet is released as soon as every earlier one has been; after a gap, up to
    `hold` later packets wait for the missing one (reordering), then it is given up as
    lost. A packet arriving after its turn was given up is dropped.
    """

    def __init__(self, hold: int = 1) -> None:
        super().__init__(capacity=16)
        self.hold = hold

    def _remove_frame(self, sequence_number: int) -> JitterFrame | None:
        while self._origin is not None:  # (set by add() before it calls this)
            head = self._packets[self._origin % self.capacity]
            if head is not None:
                self.remove(1)
                return JitterFrame(data=head._data, timestamp=head.timestamp)  # type: ignore[attr-defined]  # noqa: SLF001
            if sum(packet is not None for packet in self._packets) <= self.hold:
                return None  # the missing packet may still come
            self.remove(1)  # lost: go on without it
        return None


async def mic_frames(
    track: MediaStreamTrack, idle_timeout: float, *, first_timeout: float | None = None,
) -> AsyncIterator[AudioFrame]:
    """The browser's microphone as 20 ms pipeline frames; ends when the track does, or
    when no audio arrives for `idle_timeout` seconds (a peer that went silent, or was
    frozen) — `first_timeout` for the first frame, if given."""
    resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
    cutter = FrameCutter()
    timeout = idle_timeout if first_timeout is None else first_timeout
    while True:
        try:
            # Not asyncio.wait_for: on Python 3.11 it loses a cancellation that comes as
            # a frame arrives (every 20 ms), and the session's close then waits for ever.
            async with asyncio.timeout(timeout):
                frame = await track.recv()
        except (MediaStreamError, TimeoutError):
            return
        timeout = idle_timeout
        for out in resampler.resample(frame):  # type: ignore[arg-type]
            for pcm in cutter.push(out.to_ndarray().reshape(-1).astype(np.int16)):
                yield AudioFrame(pcm, now())


def audio_frame(pcm: Pcm, pts: int, rate: int = SAMPLE_RATE) -> av.AudioFrame:
    """Mono int16 samples as an outgoing aiortc frame, `pts` samples into its stream
    (app.transports.pacing.FrameClock counts them)."""
    frame = av.AudioFrame.from_ndarray(pcm.reshape(1, -1), format="s16", layout="mono")
    frame.sample_rate = rate
    frame.pts = pts
    frame.time_base = fractions.Fraction(1, rate)
    return frame


class SpeakerTrack(MediaStreamTrack):
    """Outbound audio: one 20 ms frame per call, self-paced (app.transports.pacing.FrameClock);
    silence when idle. `Speaker.clear()` drops queued audio at once."""

    kind = "audio"

    def __init__(self, speaker: Speaker, clock: FrameClock | None = None) -> None:
        super().__init__()
        self.speaker = speaker
        self._clock = clock or FrameClock()
        self._silence = np.zeros(FRAME_SAMPLES, np.int16)

    async def recv(self) -> av.AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        pts = await self._clock.tick()
        pcm = self.speaker.pop()  # (when the frame leaves: what was heard, for barge-in)
        return audio_frame(self._silence if pcm is None else pcm, pts)
