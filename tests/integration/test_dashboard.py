"""/metrics, /api/turns and the dashboard feed of a real `apace serve`, after real spoken
turns through an aiortc client."""

from __future__ import annotations

import asyncio
import math
import urllib.request
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.process import ServerProcess
from app.serve import use_loopback_candidates
from app.transports.webrtc.client import Client
from models.wav_files import read_wav
from pipeline.audio import speech_end_sample

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

QUESTIONS = ("What is the capital of France?", "What color is the sky?")


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    use_loopback_candidates()  # this process is the client; it is on loopback too
    proc = ServerProcess()
    yield proc
    proc.stop()


Scraped = dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]


def _scrape(server: ServerProcess) -> Scraped:
    """name → {(sample name, sorted labels): value}, parsed the way Prometheus does."""
    with urllib.request.urlopen(server.url + "/metrics", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    return {family.name: {(s.name, tuple(sorted(s.labels.items()))): s.value
                          for s in family.samples}
            for family in text_string_to_metric_families(text)}


def _count(found: Scraped, name: str, **labels: str) -> float:
    return float(found[name][(f"{name}_count", tuple(sorted(labels.items())))])


@pytest.fixture(scope="module")
def talked(server: ServerProcess, ask: Any) -> dict[str, Any]:
    """Two spoken turns in one session, watched by a dashboard websocket meanwhile."""
    before = _scrape(server)
    pushed = asyncio.run(_talk(server, ask))
    return {"before": before, "after": _scrape(server), "pushed": pushed,
            "turns": server.get("/api/turns")["turns"]}


async def _talk(server: ServerProcess, ask: Any) -> list[dict[str, Any]]:
    async with aiohttp.ClientSession() as http, \
            http.ws_connect(server.url.replace("http", "ws") + "/ws/dashboard") as feed:
        async with Client(server.url) as client:
            for question in QUESTIONS:
                pcm = read_wav(ask(question))
                mark = len(client.events)
                await client.say(pcm, speech_end_sample(pcm))
                await client.wait_for("turn", after=mark, timeout=90)
        pushed: list[dict[str, Any]] = []
        while len(pushed) < len(QUESTIONS):
            message = await feed.receive_json(timeout=10)
            if message["type"] == "turn":
                pushed.append(message)
    return pushed


def test_metrics_histograms_count_every_recorded_turn(talked: dict[str, Any]) -> None:
    turns, before, after = talked["turns"], talked["before"], talked["after"]
    assert len(turns) == len(QUESTIONS)
    assert _count(before, "apace_ttfa_seconds", where="server") == 0
    assert _count(after, "apace_ttfa_seconds", where="server") == len(turns)
    assert after["apace_turns"][("apace_turns_total", ())] == len(turns)
    for stage in ("ttft", "ttua", "endpoint", "asr_final"):
        reached = sum(1 for turn in turns if stage in turn["timeline_ms"])
        assert _count(after, f"apace_{stage}_seconds") == reached, stage
    # An aiortc client has no page to report when it heard the reply.
    assert _count(after, "apace_ttfa_seconds", where="browser") == 0
    total = after["apace_ttfa_seconds"][("apace_ttfa_seconds_sum", (("where", "server"),))]
    expected = sum(turn["timeline_ms"]["ttfa_server"] for turn in turns) / 1000
    assert math.isclose(total, expected, abs_tol=0.001 * len(turns))


def test_metrics_expose_engine_counters_and_live_gauges(talked: dict[str, Any]) -> None:
    after = talked["after"]
    speculation = after["apace_speculation"]
    assert {labels for _, labels in speculation} == {
        (("outcome", outcome),) for outcome in ("started", "committed", "cancelled")}
    assert {labels for _, labels in after["apace_cache_hits"]} == {
        (("cache", "reply"),), (("cache", "tts"),)}
    assert after["apace_sessions"][("apace_sessions", ())] >= 0
    assert after["apace_event_loop_lag_seconds"][("apace_event_loop_lag_seconds", ())] < 1.0


def test_dashboard_feed_pushes_the_same_turns_as_api_turns(talked: dict[str, Any]) -> None:
    assert talked["pushed"] == talked["turns"]
    for turn in talked["turns"]:
        bars = turn["waterfall"]
        assert bars[0]["start_ms"] == 0.0
        assert bars[-1]["end_ms"] == max(turn["timeline_ms"].values())
