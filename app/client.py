"""A real WebRTC client for apace (aiortc): what `apace bench` and the tests talk through.

It plays 16 kHz audio into the server at real-time pace as a microphone would, records
the reply audio it receives with arrival times on its own clock, and keeps every event
the server sends over the data channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import fractions
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import av
import numpy as np
from aiortc import MediaStreamTrack, RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError

from pipeline.events import FRAME_SAMPLES, SAMPLE_RATE, Pcm
from pipeline.timeline import now

ENERGY_DBFS = -45.0
"""Reply audio louder than this counts as audible (Opus silence sits far below)."""


class MicTrack(MediaStreamTrack):
    """Sends queued audio at real-time pace; silence when nothing is queued."""

    kind = "audio"

    def __init__(self, mix: Callable[[Pcm], Pcm] | None = None) -> None:
        super().__init__()
        self.mix = mix
        """What the microphone adds to each frame sent: a room's sound, the reply's echo."""
        self._queue: list[tuple[Pcm, asyncio.Future[float] | None]] = []
        self._start: float | None = None
        self._pts = 0

    def say(self, pcm: Pcm, mark_sample: int | None = None) -> asyncio.Future[float]:
        """Queue audio (16 kHz mono int16) to be sent from the next frame on.

        The future resolves to the time the frame holding `mark_sample` (default: the
        last sample) left this client — e.g. the true end of speech in `pcm`.
        """
        mark = asyncio.get_running_loop().create_future()
        mark_frame = (len(pcm) - 1 if mark_sample is None else mark_sample) // FRAME_SAMPLES
        for index, start in enumerate(range(0, len(pcm), FRAME_SAMPLES)):
            frame = pcm[start : start + FRAME_SAMPLES]
            self._queue.append((np.pad(frame, (0, FRAME_SAMPLES - len(frame))),
                                mark if index == mark_frame else None))
        return mark

    @property
    def idle(self) -> bool:
        return not self._queue

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
        pcm, mark = self._queue.pop(0) if self._queue else (np.zeros(FRAME_SAMPLES, np.int16), None)
        if mark is not None and not mark.done():
            mark.set_result(now())
        if self.mix is not None:
            pcm = self.mix(pcm)
        frame = av.AudioFrame.from_ndarray(pcm.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = SAMPLE_RATE
        frame.pts = self._pts
        frame.time_base = fractions.Fraction(1, SAMPLE_RATE)
        return frame


@dataclass
class Received:
    """Reply audio as it arrived: (arrival time, dBFS) per 20 ms of audio."""

    levels: list[tuple[float, float]] = field(default_factory=list)

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


class Client:
    """One WebRTC session with an apace server. Use `async with Client(url) as client`."""

    def __init__(self, url: str, *, mix: Callable[[Pcm], Pcm] | None = None,
                 hear: Callable[[av.AudioFrame], None] | None = None) -> None:
        """`mix` and `hear`: a room around the client (app.bench.room_sounds.RoomMix):
        what its microphone adds, and the reply audio its loudspeaker played."""
        self.url = url.rstrip("/")
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.mic = MicTrack(mix)
        self._hear = hear
        self.received = Received()
        self.events: list[dict[str, Any]] = []
        self.new_event = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self.answer: dict[str, Any] = {}
        """The server's answer to the offer, less the SDP (its session id; on a
        cluster, the node that holds the conversation)."""

    async def __aenter__(self) -> Client:
        await self.connect()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def connect(self, timeout: float = 20.0) -> None:
        self.pc.addTrack(self.mic)
        channel = self.pc.createDataChannel("apace")
        channel.on("message", self._on_message)
        self.pc.on("track", self._on_track)
        await self.pc.setLocalDescription(await self.pc.createOffer())
        offer = {"sdp": self.pc.localDescription.sdp, "type": "offer"}
        async with aiohttp.ClientSession() as http, http.post(f"{self.url}/offer", json=offer) as response:
            body = await response.json()
            if response.status != 200:
                raise ConnectionError(f"offer refused ({response.status}): {body.get('error')}")
        self.answer = {key: value for key, value in body.items() if key != "sdp"}
        await self.pc.setRemoteDescription(RTCSessionDescription(body["sdp"], body["type"]))
        await self.wait_for("ready", timeout=timeout)

    def _on_track(self, track: MediaStreamTrack) -> None:
        if track.kind == "audio" and self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self._read(track))

    async def _read(self, track: MediaStreamTrack) -> None:
        with contextlib.suppress(MediaStreamError):
            while True:
                frame = await track.recv()
                if self._hear is not None:
                    self._hear(frame)  # type: ignore[arg-type]
                pcm = frame.to_ndarray().astype(np.float64) / 32768.0  # type: ignore[union-attr]
                rms = float(np.sqrt(np.mean(pcm**2))) if pcm.size else 0.0
                self.received.levels.append((now(), 20 * np.log10(rms) if rms > 0 else -120.0))

    def _on_message(self, message: object) -> None:
        if isinstance(message, str):
            self.events.append({"received": now(), **json.loads(message)})
            self.new_event.set()

    async def wait_for(self, kind: str, *, after: int = 0, timeout: float = 30.0) -> dict[str, Any]:
        """The first event of `kind` at index ≥ `after` (waits for it)."""
        return await wait_event(self.events, self.new_event, kind, after=after, timeout=timeout)

    async def say(self, pcm: Pcm, speech_end_sample: int | None = None) -> float:
        """Send `pcm`; returns once all of it has been sent, with the time the sample
        `speech_end_sample` (default: the last) was sent."""
        mark = self.mic.say(pcm, speech_end_sample)
        while not self.mic.idle:
            await asyncio.sleep(0.01)
        return await mark

    @property
    def connection_failed(self) -> bool:
        """The session is gone (the bench stops waiting for its replies)."""
        return self.pc.connectionState in ("failed", "closed")

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.wait([self._reader])
        await self.pc.close()
