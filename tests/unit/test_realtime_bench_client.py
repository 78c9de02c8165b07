"""The bench's Realtime client (app.transports.realtime.client) against the fake-model
server: it streams audio like a microphone, gets apace's turn records (the
`apace.turn` extension, only when asked for), and times the reply audio on its clock."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from app.transports.realtime.client import RealtimeClient, realtime_url
from tests.fakes import SILENCE, VOICE
from tests.transports import fake_engine
from tests.unit.realtime_harness import rt_client, serving, speech

pytestmark = pytest.mark.timeout(20)


def test_the_url_is_the_servers_with_the_extension_asked_for() -> None:
    assert realtime_url("http://127.0.0.1:8080") == "ws://127.0.0.1:8080/v1/realtime?apace_events=1"
    assert realtime_url("https://box:8443/") == "wss://box:8443/v1/realtime?apace_events=1"


async def test_a_turn_is_timed_from_the_end_of_speech_to_audible_audio() -> None:
    fake = fake_engine(["Hi."], ["Hello there."])
    async with serving(fake) as served:
        async with RealtimeClient(f"http://127.0.0.1:{served.port}") as client:
            pcm = np.concatenate([*[VOICE] * 10, *[SILENCE] * 3])
            speech_end = await client.say(pcm, 10 * 320)
            turn = await client.wait_for("turn", timeout=10)
            heard = client.received.first_audible_after(speech_end)
    assert turn["transcript"] == "Hi." and turn["reply"] == "Hello there."
    assert "ttfa_server" in turn["timeline_ms"] and turn["speech_end_t"] is not None
    assert heard is not None
    # The endpoint wait (200 ms of silence in the test VAD), then the fake voice at once.
    assert 0.15 < heard - speech_end < 1.0


async def test_plain_clients_get_no_extension_events() -> None:
    async with serving(fake_engine()) as served, rt_client(served.url) as client:
        await client.append(speech())
        await client.next("response.done")
        await asyncio.sleep(0.05)
        assert "apace.turn" not in client.kinds()


def test_bench_runs_each_transport_on_all_on_against_one_server(
        monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    """`apace bench --transport webrtc --transport realtime`: both on the same server
    process in one run, named apart; the ablations run on the first transport only."""
    from pathlib import Path

    from app import levers
    from app.bench import latency

    runs: list[tuple[str, str, str]] = []
    servers: list[tuple[str, ...]] = []

    class Server:
        url = "http://127.0.0.1:1"

        def __init__(self, *args: str) -> None:
            servers.append(args)

        def get(self, _path: str) -> dict[str, object]:
            return {}

        def stop(self) -> None:
            pass

    async def run_config(url: str, name: str, flags: list[str], utterances: object,
                         paused: object, transport: str = "webrtc") -> latency.ConfigResult:
        runs.append((name, transport, url))
        return latency.ConfigResult(name, flags)

    monkeypatch.setattr(latency, "make_utterances", lambda folder, rounds: ([], []))
    monkeypatch.setattr(latency, "run_config", run_config)
    monkeypatch.setattr(latency, "ServerProcess", Server)
    monkeypatch.setattr(latency, "report", lambda results, out: None)
    monkeypatch.setattr(levers, "LEVERS", tuple(lv for lv in levers.LEVERS if lv.name == "speculation"))
    monkeypatch.setattr("app.serve.use_loopback_candidates", lambda: None)
    results = latency.bench(url=None, ablate=True, folder=None, rounds=1,
                            out=Path(str(tmp_path)), transports=("webrtc", "realtime"))
    assert [r.name for r in results] == ["all-on", "all-on@realtime", "all-off",
                                         "no-speculation"]
    assert [(name, way) for name, way, _ in runs] == [
        ("all-on", "webrtc"), ("all-on@realtime", "realtime"), ("all-off", "webrtc"),
        ("no-speculation", "webrtc")]
    assert len(servers) == 3  # all-on's two transports shared one server


def test_a_client_that_never_connected_closes_quietly() -> None:
    """The quality bench closes every client in a `finally`, connected or not."""
    import asyncio

    from app.transports.realtime.client import RealtimeClient

    client = RealtimeClient("http://127.0.0.1:9")
    asyncio.run(client.close())
    assert not client.connection_failed
