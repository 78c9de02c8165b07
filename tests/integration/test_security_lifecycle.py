"""Every session slot is bounded in time, a full server says when to come back, and
SIGTERM drains: a real `apace serve` (scripted models) and real aiortc clients on
loopback. Timeouts are shortened by flags so the test runs in seconds."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import aiohttp
import pytest

from app.process import REPO
from app.serve import use_loopback_candidates
from app.transports.webrtc.client import Client
from tests.fake_server import REPLY, FakeServer, settled, voice
from tests.offers import make_offer

pytestmark = pytest.mark.timeout(90)

CONNECT_S, IDLE_S, MAX_AGE_S = 3.0, 3.0, 6.0


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    use_loopback_candidates()  # this process is the client; it is on loopback too
    proc = FakeServer("--connect-timeout", str(CONNECT_S), "--idle-timeout", str(IDLE_S),
                      "--max-session-age", str(MAX_AGE_S), "--max-sessions", "4")
    yield proc
    proc.stop()


async def _sessions_gone(server: FakeServer, within_s: float) -> float:
    """Seconds until the server has no session (fails after `within_s`)."""
    started = time.monotonic()
    while server.get("/healthz")["sessions"]:
        assert time.monotonic() - started < within_s, server.get("/healthz")
        await asyncio.sleep(0.1)
    return time.monotonic() - started


def _metrics(server: FakeServer) -> str:
    with urllib.request.urlopen(server.url + "/metrics", timeout=10) as response:
        return str(response.read().decode())


def _ended(server: FakeServer, reason: str | None = None) -> float:
    """Sessions ended for `reason` (any reason: None), from /metrics."""
    prefix = "apace_sessions_ended_total{" + ("" if reason is None else f'reason="{reason}"}}')
    return sum(float(line.split()[-1]) for line in _metrics(server).splitlines()
               if line.startswith(prefix))


async def _post_offer(url: str, body: bytes) -> tuple[int, dict[str, str]]:
    async with aiohttp.ClientSession() as http, http.post(
            url + "/offer", data=body, headers={"Content-Type": "application/json"}) as response:
        await response.read()
        return response.status, dict(response.headers)


async def test_an_offer_that_never_connects_is_reaped(server: FakeServer) -> None:
    """(Reaped by the connect deadline, or sooner when ICE fails on its own: the offering
    peer is gone.)"""
    await settled(server)
    before = _ended(server)
    body = json.dumps({"sdp": await make_offer(), "type": "offer"}).encode()
    assert (await _post_offer(server.url, body))[0] == 200  # and nobody ever connects
    assert server.get("/healthz")["sessions"] == 1
    await _sessions_gone(server, CONNECT_S + 2)
    assert _ended(server) == before + 1


_FROZEN_CLIENT = """
import asyncio, sys
from app.transports.webrtc.client import Client
from app.serve import use_loopback_candidates
use_loopback_candidates()
async def main():
    client = Client(sys.argv[1])
    await client.connect()
    print("connected", flush=True)
    await asyncio.sleep(600)
asyncio.run(main())
"""


async def test_a_frozen_client_is_reaped_after_the_idle_timeout(server: FakeServer) -> None:
    await settled(server)
    client = subprocess.Popen([sys.executable, "-c", _FROZEN_CLIENT, server.url], cwd=REPO,
                              stdout=subprocess.PIPE)
    try:
        assert client.stdout is not None
        assert client.stdout.readline().strip() == b"connected"
        await asyncio.sleep(1.0)  # audio is flowing
        client.send_signal(signal.SIGSTOP)
        assert await _sessions_gone(server, IDLE_S + 3) < IDLE_S + 3
    finally:
        client.kill()  # (SIGKILL ends a stopped process too)
        client.wait()
    assert _ended(server, "idle") >= 1


async def test_a_session_ends_at_its_maximum_age_and_the_page_is_told(
        server: FakeServer) -> None:
    await settled(server)
    async with Client(server.url) as client:
        going = await client.wait_for("going_away", timeout=MAX_AGE_S + 3)
        assert "maximum age" in going["message"]
        assert going["received"] - client.events[0]["received"] < MAX_AGE_S + 1
    await _sessions_gone(server, 3)


async def test_a_burst_of_offers_holds_the_cap_and_says_when_to_retry(
        server: FakeServer) -> None:
    await settled(server)
    body = json.dumps({"sdp": await make_offer(), "type": "offer"}).encode()
    latencies: list[float] = []
    stop = asyncio.Event()

    async def probe() -> None:
        async with aiohttp.ClientSession() as http:
            while not stop.is_set():
                started = time.perf_counter()
                async with http.get(server.url + "/healthz") as response:
                    await response.read()
                latencies.append(time.perf_counter() - started)
                await asyncio.sleep(0.01)

    prober = asyncio.create_task(probe())
    await asyncio.sleep(0.2)
    answers = await asyncio.gather(*(_post_offer(server.url, body) for _ in range(50)))
    await asyncio.sleep(0.5)
    stop.set()
    await prober
    statuses = [status for status, _ in answers]
    assert statuses.count(200) == 4 and statuses.count(503) == 46, statuses
    assert all(int(headers["Retry-After"]) > 0 for status, headers in answers if status == 503)
    assert server.get("/healthz")["sessions"] == 4
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    assert len(latencies) >= 20 and p99 < 0.1, latencies[-5:]
    await _sessions_gone(server, CONNECT_S + 3)  # none of them ever connects


async def _until_audible(client: Client, after: float, within_s: float = 10) -> float:
    deadline = time.monotonic() + within_s
    while (at := client.received.first_audible_after(after)) is None:
        assert time.monotonic() < deadline, "no reply audio"
        await asyncio.sleep(0.02)
    return at


async def test_sigterm_lets_the_reply_finish_and_refuses_new_offers() -> None:
    use_loopback_candidates()
    server = FakeServer("--drain-timeout", "10")
    try:
        body = json.dumps({"sdp": await make_offer(), "type": "offer"}).encode()
        async with Client(server.url) as client:
            speech_end = await client.say(voice(trail_s=0.0))
            await _until_audible(client, speech_end)
            await asyncio.sleep(0.3)  # the reply is mid-word
            server.proc.send_signal(signal.SIGTERM)
            terminated = time.monotonic()
            going = await client.wait_for("going_away", timeout=5)
            assert "shutting down" in going["message"] and going["retry_after_s"] > 0
            status, headers = await _post_offer(server.url, body)
            assert status == 503 and int(headers["Retry-After"]) > 0
            turn = await client.wait_for("turn", timeout=15)
            assert turn["interrupted"] is False and turn["reply"] == REPLY
            assert client.received.audible_between(terminated + 1.0, turn["received"])
        assert server.proc.wait(timeout=15) == 0
        assert b"draining 1 session" in server.log
    finally:
        server.stop()


def test_the_metrics_show_what_a_leak_would(server: FakeServer) -> None:
    names = {line.split("{")[0].split(" ")[0] for line in _metrics(server).splitlines()
             if line and not line.startswith("#")}
    assert {"process_resident_memory_bytes", "process_open_fds", "apace_threads",
            "apace_asyncio_tasks", "apace_sessions", "apace_draining"} <= names
