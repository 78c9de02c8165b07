"""A real WebRTC client for apace (aiortc): what `apace bench` and the tests talk through.

It plays 16 kHz audio into the server at real-time pace as a microphone would, records
the reply audio it receives with arrival times on its own clock, and keeps every event
the server sends over the data channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

import aiohttp
import av
from aiortc import MediaStreamTrack, RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError

from app.transports.client_audio import MicQueue, Received, wait_event
from app.transports.pacing import FrameClock
from app.transports.webrtc.tracks import audio_frame
from pipeline.audio import rms_dbfs
from pipeline.events import Pcm
from pipeline.timeline import now


class MicTrack(MediaStreamTrack):
    """Sends queued audio at real-time pace (app.transports.pacing.FrameClock); silence when nothing
    is queued."""

    kind = "audio"

    def __init__(self, mix: Callable[[Pcm], Pcm] | None = None,
                 clock: FrameClock | None = None) -> None:
        super().__init__()
        self.mix = mix
        """What the microphone adds to each frame sent: a room's sound, the reply's echo."""
        self.queue = MicQueue()
        self._clock = clock or FrameClock()

    def say(self, pcm: Pcm, mark_sample: int | None = None) -> asyncio.Future[float]:
        """Queue audio (16 kHz mono int16); see `MicQueue.say`."""
        return self.queue.say(pcm, mark_sample)

    @property
    def idle(self) -> bool:
        return self.queue.idle

    async def recv(self) -> av.AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        pts = await self._clock.tick()
        pcm = self.queue.pop()
        if self.mix is not None:
            pcm = self.mix(pcm)
        return audio_frame(pcm, pts)


class Client:
    """One WebRTC session with an apace server. Use `async with Client(url) as client`."""

    def __init__(self, url: str, *, mix: Callable[[Pcm], Pcm] | None = None,
                 hear: Callable[[av.AudioFrame], None] | None = None,
                 processing: dict[str, bool] | None = None) -> None:
        """`mix` and `hear`: a room around the client (app.bench.room_sounds.RoomMix):
        what its microphone adds, and the reply audio its loudspeaker played.
        `processing`: what it says it did to its microphone, as a browser does (e.g.
        {"echoCancellation": True}); None: raw audio."""
        self.url = url.rstrip("/")
        self.processing = processing
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
        offer: dict[str, Any] = {"sdp": self.pc.localDescription.sdp, "type": "offer"}
        if self.processing is not None:
            offer["processing"] = self.processing
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
                # (one aiortc frame is 20 ms: 48 kHz stereo, interleaved)
                self.received.levels.append((now(), rms_dbfs(frame.to_ndarray())))  # type: ignore[union-attr]

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
