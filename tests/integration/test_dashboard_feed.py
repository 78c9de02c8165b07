"""The dashboard's websocket feed over real loopback sockets, with the real aiohttp app
(no models: turns are recorded directly, as a conversation's callback would)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from app.appkeys import SESSIONS
from app.observe.dashboard import OUTBOX_LIMIT
from app.server import ServerOptions, Sessions, make_app
from pipeline.compute.stats import EngineStats
from pipeline.conversation_events import Turn
from pipeline.timeline import SPEECH_END, TTFA_SERVER, TTFT, Timeline

pytestmark = pytest.mark.timeout(60)

Http = TestClient[web.Request, web.Application]


@pytest.fixture
async def client() -> AsyncIterator[Http]:
    engine = SimpleNamespace(stats=EngineStats(), cpu=None, llm_memory=None)
    app = make_app(engine, ServerOptions(slo_ttfa_ms=700.0))  # type: ignore[arg-type]
    async with TestClient(TestServer(app, host="127.0.0.1")) as made:
        yield made


def _sessions(client: Http) -> Sessions:
    assert client.app is not None
    return client.app[SESSIONS]  # type: ignore[no-any-return]


def _turn(index: int) -> Turn:
    timeline = Timeline(turn=index, stamps={SPEECH_END: 1.0, TTFT: 1.2, TTFA_SERVER: 1.5})
    return Turn(index, "what time is it", "It is noon.", "It is noon.", False, timeline)


async def _next(ws: aiohttp.ClientWebSocketResponse, kind: str) -> dict[str, Any]:
    async with asyncio.timeout(5):
        while True:
            message = json.loads(await ws.receive_str())
            if message["type"] == kind:
                return message  # type: ignore[no-any-return]


async def test_feed_sends_stats_at_once_then_each_recorded_turn(client: Http) -> None:
    async with client.ws_connect("/ws/dashboard") as ws:
        stats = await _next(ws, "stats")
        assert stats["slo"]["objective_ms"] == 700.0
        assert stats["dashboards"] == 1
        _sessions(client).record_turn(SimpleNamespace(id=3), _turn(1))  # type: ignore[arg-type]
        turn = await _next(ws, "turn")
        after = await _next(ws, "stats")
    listed = (await (await client.get("/api/turns")).json())["turns"]
    assert turn == listed[0]  # the very record /api/turns lists
    assert turn["timeline_ms"] == {"ttft": 200.0, "ttfa_server": 500.0}
    assert after["latency"]["ttfa_server"]["p50"] == 500.0
    assert after["slo"]["attainment"] == 1.0


async def test_api_stats_answers_what_the_feed_sends(client: Http) -> None:
    stats = await (await client.get("/api/stats")).json()
    assert set(stats) >= {"latency", "slo", "engine", "loop_lag_ms", "sessions"}
    assert stats["engine"]["speculation"]["wasted_tokens"] == 0


async def _raw_websocket(port: int) -> socket.socket:
    """A websocket client that completes the handshake and then never reads again, with
    the smallest receive buffer the kernel allows."""
    loop = asyncio.get_running_loop()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.setblocking(False)
    await loop.sock_connect(sock, ("127.0.0.1", port))
    await loop.sock_sendall(sock, (
        b"GET /ws/dashboard HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        b"Sec-WebSocket-Version: 13\r\n\r\n"))
    head = b""
    while b"\r\n\r\n" not in head:
        head += await loop.sock_recv(sock, 1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def _feed_tasks() -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t.get_name() in ("dashboard-send", "dashboard-read")]


async def test_a_dashboard_that_never_reads_is_dropped_with_a_bounded_queue(
        client: Http) -> None:
    sessions = _sessions(client)
    assert client.port is not None
    stalled = await _raw_websocket(client.port)
    try:
        async with client.ws_connect("/ws/dashboard") as healthy:
            async with asyncio.timeout(5):
                while len(sessions.hub.clients) < 2:
                    await asyncio.sleep(0.01)
            outboxes = list(sessions.hub.clients)
            pad = "x" * 256 * 1024  # fills the socket buffers in a few messages
            published = 0
            while all(o.dropped is None for o in outboxes) and published < 2000:
                sessions.hub.publish({"type": "turn", "turn": published, "pad": pad})
                published += 1
                await asyncio.sleep(0)
                # The healthy client reads everything it is sent.
                while not healthy.closed and (msg := await _poll(healthy)) is not None:
                    assert msg.type == aiohttp.WSMsgType.TEXT
            dropped = [o for o in outboxes if o.dropped is not None]
            assert len(dropped) == 1, f"nobody dropped after {published} messages"
            assert "too slow" in (dropped[0].dropped or "")
            assert max(o.peak for o in outboxes) <= OUTBOX_LIMIT
            assert dropped[0].messages == type(dropped[0].messages)(), "freed at once"
            assert len(sessions.hub.clients) == 1 and not healthy.closed
            async with asyncio.timeout(5):  # the stalled client's handler ends by itself
                while len(_feed_tasks()) > 2:
                    await asyncio.sleep(0.05)
            assert sessions.stats()["dashboards_dropped"] == 1
    finally:
        stalled.close()


async def _poll(ws: aiohttp.ClientWebSocketResponse) -> aiohttp.WSMessage | None:
    try:
        return await ws.receive(timeout=0.001)
    except TimeoutError:
        return None


async def test_shutdown_closes_dashboards_as_going_away(client: Http) -> None:
    ws = await client.ws_connect("/ws/dashboard")
    await _next(ws, "stats")
    closing = asyncio.create_task(client.server.close())
    async with asyncio.timeout(10):
        while (await ws.receive()).type not in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
            pass
    await closing
    assert ws.close_code == aiohttp.WSCloseCode.GOING_AWAY
    assert _feed_tasks() == []
