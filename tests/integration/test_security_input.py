"""Hostile input never reaches a 5xx, a leak or a dead session: a fuzz of malformed
offers, bodies that arrive in pieces, extra media, and hostile data-channel messages —
against a real `apace serve` (scripted models) over loopback."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from aiortc import RTCDataChannel

from app.security.limits import read_body, refusals
from app.serve import use_loopback_candidates
from app.transports.webrtc.client import Client
from tests.fake_server import FakeServer, settled
from tests.integration.fuzz_offers import Case, malformed_offers
from tests.offers import make_offer

pytestmark = pytest.mark.timeout(120)

FUZZ_CASES = 1200


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    use_loopback_candidates()  # this process is the client; it is on loopback too
    proc = FakeServer("--connect-timeout", "2", "--idle-timeout", "3", "--max-sessions", "4")
    yield proc
    proc.stop()


async def _pieces(body: bytes, pause_s: float) -> AsyncIterator[bytes]:
    step = max(1, len(body) // 3)
    for start in range(0, len(body), step):
        if start and pause_s:
            await asyncio.sleep(pause_s)
        yield body[start:start + step]


async def _post(http: aiohttp.ClientSession, url: str, case: Case) -> int:
    data: Any = case.body if case.send == "plain" else _pieces(
        case.body, 0.03 if case.send == "slow" else 0.0)
    try:
        async with http.post(url + "/offer", data=data, headers=case.headers) as response:
            await response.read()
            return response.status
    except aiohttp.ClientOSError:
        # The server answered an oversized chunked body early and closed while we were
        # still sending: what it answered is not ours to read. Count it as refused.
        assert case.category == "oversize", case
        return 413


LEFT_BEHIND = 1
"""Tasks and fds the server may hold above its settled level once the hostile load is
over: one connection (a task and a socket), the test client's own keep-alive connection
from its last offer, which the keep-alive timeout closes at about the same time as the
half-sent heads. Measured over 3 runs: 5 tasks / 9 fds before; 5 / 9, 5 / 9 and 6 / 10
when settled (4.9-5.1 s); 31-35 tasks and 17 fds right after the load."""
SETTLE_S = 10.0
"""How long the server may take to let go: the connect deadline of the abandoned offers
(2 s here) and the keep-alive timeout that closes half-sent request heads (app.serve's
KEEPALIVE_S, 5 s) both fall inside it."""
HEAD = b"POST /offer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


async def _hostile_connections(
        port: int, body: bytes) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    """What a client can leave half done, on raw sockets: a request head sent in part and
    the socket kept open (returned: the caller keeps them), a body cut off by a client that
    leaves, a whole offer from a client that leaves before the answer."""
    held = []
    for _ in range(5):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(HEAD)  # ... and never the blank line that ends the head
        held.append((reader, writer))  # (a writer that is dropped closes its socket)
    for framing, part in ((b"Content-Length: %d\r\n\r\n" % len(body), body[:len(body) // 2]),
                          (b"Transfer-Encoding: chunked\r\n\r\n", b"400\r\n" + body[:100]),
                          (b"Content-Length: %d\r\n\r\n" % len(body), body)):
        for _ in range(3):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(HEAD + framing + part)
            await writer.drain()
            writer.close()
    return held


async def _back_to(server: FakeServer, baseline: dict[str, Any]) -> dict[str, Any]:
    """/healthz once no session is left and tasks and fds are within LEFT_BEHIND of
    `baseline` (fails after SETTLE_S, showing what stayed)."""
    deadline = asyncio.get_running_loop().time() + SETTLE_S
    while True:
        health: dict[str, Any] = server.get("/healthz")
        if (health["sessions"] == 0 and health["tasks"] <= baseline["tasks"] + LEFT_BEHIND
                and health["fds"] <= baseline["fds"] + LEFT_BEHIND):
            return health
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"left behind after {SETTLE_S:g} s: {baseline} -> "
                                 f"{server.get('/healthz?detail')}")
        await asyncio.sleep(0.25)


async def test_a_thousand_malformed_offers_get_4xx_and_leave_nothing_behind(
        server: FakeServer) -> None:
    """Malformed offers over keep-alive connections the client keeps open, foreign
    Origins, request heads never finished, bodies cut off, offers abandoned before and
    after their answer: every offer is refused with a 4xx, and within SETTLE_S the
    server's tasks and fds are back to where they were, with the client still there."""
    baseline = await settled(server)
    offer = await make_offer()
    cases = malformed_offers(offer, FUZZ_CASES)
    gate = asyncio.Semaphore(16)

    async def one(case: Case) -> tuple[Case, int]:
        async with gate:
            return case, await _post(http, server.url, case)

    valid = json.dumps({"sdp": offer, "type": "offer"}).encode()
    async with aiohttp.ClientSession() as http:  # keep-alive: the server must close
        results = await asyncio.gather(*(one(case) for case in cases))
        for origin in ("http://evil.example", "null", f"http://127.0.0.1:{server.port + 1}"):
            async with http.post(server.url + "/offer", data=valid, headers={
                    "Content-Type": "application/json", "Origin": origin}) as response:
                results.append((Case("origin", valid, statuses=range(403, 404)),
                                response.status))
        held = await _hostile_connections(server.port, valid)
        for _ in range(2):  # answered, and never connected to
            async with http.post(server.url + "/offer", data=valid,
                                 headers={"Content-Type": "application/json"}) as response:
                assert response.status == 200
        after = await _back_to(server, baseline)
        closed_by_server = [await reader.read() for reader, _ in held]
    wrong = [(case.category, case.send, status, case.body[:120]) for case, status in results
             if status not in case.statuses]
    assert not wrong, f"{len(wrong)} unexpected answers, e.g. {wrong[:5]}"
    statuses = Counter(status for _, status in results)
    assert sum(statuses.values()) >= 1000 and {400, 403, 413, 415} <= set(statuses)
    assert closed_by_server == [b""] * len(held)  # EOF: the server let go, not the client
    assert b"Traceback" not in server.log  # hostile input is refused, never an error
    assert after["threads"] <= baseline["threads"] + 1, server.get("/healthz?detail")
    assert server.alive()


async def _raw_post(port: int, body: bytes, *, chunked: bool, pause_s: float = 0.05) -> int:
    """POST /offer with the body in two writes `pause_s` apart."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    framing = (b"Transfer-Encoding: chunked" if chunked
               else f"Content-Length: {len(body)}".encode())
    writer.write(b"POST /offer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 + framing + b"\r\nConnection: close\r\n\r\n")
    half = len(body) // 2
    for part in (body[:half], body[half:]):
        writer.write(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
        await writer.drain()
        await asyncio.sleep(pause_s)
    if chunked:
        writer.write(b"0\r\n\r\n")
    status = int((await reader.readline()).split()[1])
    writer.close()
    await writer.wait_closed()
    return status


@pytest.mark.parametrize("chunked", [False, True], ids=["two-writes", "chunked"])
async def test_a_valid_offer_in_pieces_is_answered(server: FakeServer, chunked: bool) -> None:
    body = json.dumps({"sdp": await make_offer(), "type": "offer"}).encode()
    assert await _raw_post(server.port, body, chunked=chunked) == 200


async def test_a_body_that_never_finishes_gets_408() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=await read_body(request, limit=1000, timeout_s=0.3))

    app = web.Application(middlewares=[refusals()])
    app.router.add_post("/", handler)
    async with TestServer(app, host="127.0.0.1") as test_server:
        reader, writer = await asyncio.open_connection("127.0.0.1", test_server.port)
        writer.write(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nhalf")
        status = int((await asyncio.wait_for(reader.readline(), 5)).split()[1])
        writer.close()
    assert status == 408


async def test_an_extra_video_track_is_refused_and_memory_stays_flat(server: FakeServer) -> None:
    before = await settled(server)
    body = json.dumps({"sdp": await make_offer(video=True), "type": "offer"}).encode()
    async with aiohttp.ClientSession() as http:
        for _ in range(20):
            async with http.post(server.url + "/offer", data=body,
                                 headers={"Content-Type": "application/json"}) as response:
                assert response.status == 400
                assert "video" in (await response.json())["error"]
    after = await settled(server)
    assert after["rss_bytes"] - before["rss_bytes"] < 8 * 2**20, (before, after)


class ChannelClient(Client):
    """A Client that keeps its data channel, to send what a page could."""

    channel: RTCDataChannel

    async def connect(self, timeout: float = 20.0) -> None:
        create = self.pc.createDataChannel

        def keep(label: str, **kwargs: Any) -> RTCDataChannel:
            self.channel = create(label, **kwargs)
            return self.channel

        self.pc.createDataChannel = keep  # type: ignore[method-assign,assignment]
        await super().connect(timeout)

    async def ping(self, t: float) -> dict[str, Any]:
        mark = len(self.events)
        self.channel.send(json.dumps({"type": "ping", "t": t}))
        return await self.wait_for("pong", after=mark, timeout=5)


async def test_hostile_data_channel_messages_get_errors_and_the_session_lives_on(
        server: FakeServer) -> None:
    client = ChannelClient(server.url)
    await client.connect()
    try:
        for message in ("[" * 1500 + "]" * 1500, '{"type": ' * 1000, "x" * 5000,
                        '{"type": "ping", "t": ' + "[" * 100 + "]" * 100 + "}"):
            mark = len(client.events)
            client.channel.send(message)
            error = await client.wait_for("error", after=mark, timeout=5)
            assert "refused" in error["message"], error
        client.channel.send(b"\x00binary")
        assert (await client.ping(1.0))["t"] == 1.0  # the receive path is alive
        mark = len(client.events)
        for i in range(300):  # a flood is cut down to the rate limit, not fatal
            client.channel.send(json.dumps({"type": "ping", "t": i}))
        limited = await client.wait_for("error", after=mark, timeout=5)
        assert "too many" in limited["message"]
        await asyncio.sleep(1.0)
        pongs = [e for e in client.events[mark:] if e["type"] == "pong"]
        assert 10 < len(pongs) < 100
        assert (await client.ping(2.0))["t"] == 2.0
    finally:
        await client.close()
