"""A Realtime client for `apace bench --transport realtime`: the same measurements as
app.transports.webrtc.client.Client (WebRTC), over /v1/realtime.

Like a microphone it sends audio continuously at real-time pace (silence between
questions: apace's endpointer needs it), records each reply audio delta's arrival time
and level on its own clock, and keeps apace's `turn` records and its timer and barge-in
events (the `apace.*` extension events, asked for with `?apace_events=1`). The questions
are converted to 24 kHz whole, before sending: a Realtime client's microphone runs at
24 kHz, so no resampler delay may be counted in its TTFA.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import numpy as np
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import WebSocketException

from app.transports.client_audio import MicQueue, Received, wait_event
from app.transports.pacing import FrameClock
from app.transports.realtime.protocol import RATE
from pipeline.audio import resample, to_int16
from pipeline.events import FRAME_MS, SAMPLE_RATE, Pcm
from pipeline.timeline import now

CHUNK = RATE * FRAME_MS // 1000
"""24 kHz samples in one 20 ms append."""


class BenchClient(Protocol):
    """What the bench needs of a client, whatever the transport."""

    events: list[dict[str, Any]]
    received: Received

    async def say(self, pcm: Pcm, speech_end_sample: int | None = None) -> float: ...

    async def wait_for(self, kind: str, *, after: int = 0,
                       timeout: float = 30.0) -> dict[str, Any]: ...


def realtime_url(url: str) -> str:
    """ws(s)://host:port/v1/realtime?apace_events=1 for a server's http(s) URL."""
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, "/v1/realtime", "apace_events=1", ""))


class RealtimeClient:
    """One Realtime session with an apace server: `async with RealtimeClient(url) as c`."""

    def __init__(self, url: str, token: str | None = None, *, ready_timeout: float = 60.0
                 ) -> None:
        self.url = realtime_url(url)
        self.token = token
        self.ready_timeout = ready_timeout
        """session.created comes once the session's LLM context is open and warmed."""
        self.events: list[dict[str, Any]] = []
        self.new_event = asyncio.Event()
        self.received = Received()
        self._ws: ClientConnection | None = None
        self._mic_queue = MicQueue(CHUNK)
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> RealtimeClient:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        self._ws = await connect(self.url, additional_headers=headers, max_size=None)
        self._tasks = [asyncio.create_task(self._read(), name="rt-client-read")]
        await self.wait_for("session.created", timeout=self.ready_timeout)
        self._tasks.append(asyncio.create_task(self._mic(), name="rt-client-mic"))
        return self

    async def connect(self) -> None:
        """The same as `async with`: open the session, wait for session.created. A refused
        upgrade (503 when full, 401 without the credential) is a ConnectionError."""
        try:
            await self.__aenter__()
        except WebSocketException as error:
            raise ConnectionError(f"the realtime session was refused: {error}") from None

    async def close(self) -> None:
        await self.__aexit__()

    @property
    def connection_failed(self) -> bool:
        """The websocket has closed (the bench stops waiting for its replies)."""
        return self._ws is not None and self._ws.close_code is not None

    async def __aexit__(self, *_exc: object) -> None:
        for task in self._tasks:
            task.cancel()
        if self._tasks:  # none when the connection failed before the session began
            await asyncio.wait(self._tasks)
        self._tasks = []
        if self._ws is not None:
            await self._ws.close()

    async def _mic(self) -> None:
        """One 20 ms append per 20 ms, on one schedule: the question, else silence."""
        assert self._ws is not None
        clock = FrameClock(RATE)
        while True:
            await clock.tick()
            data = self._mic_queue.pop().astype("<i2").tobytes()
            await self._ws.send(json.dumps({"type": "input_audio_buffer.append",
                                            "audio": base64.b64encode(data).decode()}))

    async def _read(self) -> None:
        assert self._ws is not None
        async for message in self._ws:
            event = json.loads(message)
            kind = event.get("type")
            if kind == "response.output_audio.delta":
                pcm = np.frombuffer(base64.b64decode(event["delta"]), "<i2")
                self.received.hear(pcm, now(), CHUNK)
                continue
            if isinstance(kind, str) and kind.startswith("apace."):  # apace's own events
                event = {**event, "type": kind.removeprefix("apace.")}
            self.events.append({"received": now(), **event})
            self.new_event.set()

    async def wait_for(self, kind: str, *, after: int = 0, timeout: float = 30.0
                       ) -> dict[str, Any]:
        return await wait_event(self.events, self.new_event, kind, after=after, timeout=timeout)

    async def say(self, pcm: Pcm, speech_end_sample: int | None = None) -> float:
        """Send `pcm` (16 kHz); returns once it is all sent, with the time the chunk holding
        `speech_end_sample` (default: the last) left."""
        audio = to_int16(resample(pcm, SAMPLE_RATE, RATE)).astype("<i2")
        end = len(pcm) - 1 if speech_end_sample is None else speech_end_sample
        mark = self._mic_queue.say(audio, end * RATE // SAMPLE_RATE)
        while not self._mic_queue.idle:
            await asyncio.sleep(0.01)
        return await mark
