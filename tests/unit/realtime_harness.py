"""A live apace app (the real make_app, fake models) on loopback, and a raw `websockets`
Realtime client for the tests."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from aiohttp import web
from websockets.asyncio.client import ClientConnection, connect

from app.security.access import AccessPolicy
from app.server import ServerOptions, make_app
from app.transports.audio import Outbound
from app.transports.realtime.route import REALTIME
from tests.fakes import SILENCE, VOICE, any_sound
from tests.transports import FakeEngine


@dataclass
class Served:
    url: str
    fake: FakeEngine
    app: web.Application
    port: int


@contextlib.asynccontextmanager
async def serving(fake: FakeEngine, access: AccessPolicy | None = None,
                  max_sessions: int = 4) -> AsyncIterator[Served]:
    app = make_app(fake.engine, ServerOptions(max_sessions=max_sessions), access)
    app[REALTIME].classify = any_sound
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield Served(f"ws://127.0.0.1:{port}/v1/realtime", fake, app, port)
    finally:
        await runner.cleanup()
        fake.close()


def pcm24(frames: list[np.ndarray]) -> str:
    """16 kHz pipeline frames as the base64 24 kHz PCM16 a Realtime client appends."""
    out = Outbound(24_000)
    return base64.b64encode(b"".join(out.push(f) for f in frames)).decode()


def speech(voiced: int = 10, silent: int = 20) -> list[np.ndarray]:
    return [VOICE] * voiced + [SILENCE] * silent


class RtClient:
    """A raw websockets client that keeps every server event."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self._returned: set[int] = set()

    async def send(self, **event: Any) -> None:
        await self.ws.send(json.dumps(event))

    async def append(self, frames: list[np.ndarray], chunk: int = 5) -> None:
        """Append audio in 100 ms messages, a little faster than real time."""
        for i in range(0, len(frames), chunk):
            await self.send(type="input_audio_buffer.append", audio=pcm24(frames[i : i + chunk]))
            await asyncio.sleep(0.005)

    async def next(self, kind: str, timeout: float = 5.0,
                   where: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any]:
        """The first event of `kind` not returned before (waits for it)."""
        async with asyncio.timeout(timeout):
            while True:
                for index, event in enumerate(self.events):
                    if index not in self._returned and event["type"] == kind \
                            and (where is None or where(event)):
                        self._returned.add(index)
                        return event
                self.events.append(json.loads(await self.ws.recv()))

    def kinds(self) -> list[str]:
        return [e["type"] for e in self.events]


@contextlib.asynccontextmanager
async def rt_client(url: str, **headers: str) -> AsyncIterator[RtClient]:
    async with connect(url, additional_headers=headers or None, max_size=None) as ws:
        client = RtClient(ws)
        await client.next("session.created")
        yield client
