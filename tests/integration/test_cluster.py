"""apace on a Ray cluster (app.cluster), on one machine: `ray.cluster_utils.Cluster` with
a head (the ingress only) and two apace nodes, each node actor loading the real embedded
models; every node's media on loopback. Conversations are placed across nodes, refused
with 503 + Retry-After when both are full (WebRTC, Realtime and Wyoming alike), survive
the loss of the other node, keep talking through a drain, and a real spoken question is
answered through the ingress — over WebRTC, over a Realtime websocket piped to a node's
own listener, and over Wyoming piped the same way; the node listeners refuse anyone
without the cluster secret."""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest

from app.cluster.ingress import Cluster as Ingress
from app.observe.logs import set_own_level
from app.process import REPO, free_port
from app.serve import use_loopback_candidates
from app.server import ServerOptions
from app.transports.realtime.client import RealtimeClient
from app.transports.webrtc.client import Client
from app.transports.wyoming.server import WyomingOptions
from models.wav_files import read_wav
from pipeline.audio import speech_end_sample
from tests.offers import CHROME_OFFER
from tests.wer import wer

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

MIB = 1 << 20


class IngressThread:
    """`serve_cluster` on its own event loop in a thread (the tests' loops come and go)."""

    def __init__(self, options: ServerOptions) -> None:
        from app.cluster.run import engine_from
        from app.runtime import EngineOptions, Settings

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.wyoming = WyomingOptions(port=free_port())
        self.cluster: Ingress | None = None
        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        self._make = functools.partial(engine_from, Settings(engine=EngineOptions(turn_detector=False)))
        self._options = options
        self._thread = threading.Thread(target=self._run, name="ingress", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from app.cluster.run import serve_cluster

        def ready(cluster: Ingress) -> None:
            self.cluster = cluster

        self._loop.run_until_complete(serve_cluster(
            self._make, self._options, host="127.0.0.1", port=self.port, tls=None,
            access=None, loopback=True, wyoming=self.wyoming, stop=self._stop, ready=ready))

    def nodes(self) -> list[str]:
        return sorted(self.cluster.nodes) if self.cluster is not None else []

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=60)


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[Any, list[Any], IngressThread]]:
    from ray.cluster_utils import Cluster

    use_loopback_candidates()  # this process is the clients: on loopback too
    small = {"object_store_memory": 80 * MIB}
    head = Cluster(initialize_head=True,
                   head_node_args={"num_cpus": 1, "include_dashboard": False, **small})
    workers = [head.add_node(num_cpus=1, resources={"apace_node": 1}, **small)
               for _ in range(2)]
    ray.init(address=head.address, namespace="apace", log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    set_own_level(logging.INFO)  # the nodes log at INFO too: `_explain` shows their tails
    ingress = IngressThread(ServerOptions(max_sessions=2, admit_by_load=False,
                                          idle_timeout_s=3.0))
    try:
        deadline = time.monotonic() + 240
        while len(ingress.nodes()) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert len(ingress.nodes()) == 2, "the node actors did not start"
        yield head, workers, ingress
    finally:
        set_own_level(logging.NOTSET)
        ingress.stop()
        ray.shutdown()
        head.shutdown()


def _explain(events: list[dict[str, Any]], since: float, head: Any) -> str:
    """Why no turn came: the events received (ms after the end of speech) and the last lines
    each node logged (Ray's worker log files)."""
    lines = ["no turn within 60 s; events: " + ", ".join(
        f"{e['type']}@{1000 * (e['received'] - since):.0f}" for e in events)]
    for path in sorted(Path(head.head_node.get_logs_dir_path()).glob("worker-*.err")):
        tail = path.read_text(errors="replace").splitlines()[-40:]
        if any("apace" in line or " app." in line or "pipeline." in line for line in tail):
            lines += [f"--- {path.name}", *tail]
    return "\n".join(lines)


def _node_of(name: str, workers: list[Any]) -> Any:
    return next(w for w in workers if name.endswith(w.node_id[:8]))


async def _connect(url: str) -> tuple[Client, str]:
    client = Client(url)
    await client.connect()
    return client, client.answer["node"]


async def _post_offer(url: str) -> tuple[int, dict[str, str], dict[str, Any]]:
    async with aiohttp.ClientSession() as http, http.post(
            f"{url}/offer", json={"sdp": CHROME_OFFER, "type": "offer"}) as response:
        return response.status, dict(response.headers), await response.json()


async def _ask(client: Client, pcm: np.ndarray) -> dict[str, Any]:
    mark = len(client.events)
    await client.say(pcm, speech_end_sample(pcm))
    return await client.wait_for("turn", after=mark, timeout=60)


async def _until_idle(url: str) -> None:
    """Until the placement book counts no session anywhere (a closed one is counted
    until its node's next report)."""
    async with aiohttp.ClientSession() as http:
        for _ in range(50):
            async with http.get(f"{url}/api/nodes") as response:
                nodes = (await response.json())["nodes"]
            if not any(n["sessions"] or n["held"] for n in nodes):
                return
            await asyncio.sleep(0.2)


async def test_a_realtime_client_through_the_ingress_hears_a_spoken_answer(cluster, ask
                                                                          ) -> None:
    _head, _workers, ingress = cluster
    question = read_wav(ask("What is the capital of France?"))
    async with RealtimeClient(ingress.url) as client:  # piped to a node's own listener
        await asyncio.sleep(0.3)
        speech_end = await client.say(question, speech_end_sample(question))
        try:
            turn = await client.wait_for("turn", timeout=60)
        except TimeoutError:
            pytest.fail(_explain(client.events, speech_end, _head))
        done = await client.wait_for("response.done", timeout=30)
        heard = await client.wait_for(
            "conversation.item.input_audio_transcription.completed", timeout=5)
    assert wer("What is the capital of France?", heard["transcript"]) <= 0.2, heard
    assert "capital" in turn["transcript"].lower() and turn["reply"].strip()
    assert done["response"]["status"] == "completed"
    assert done["response"]["output"][0]["content"][0]["transcript"].strip()
    assert client.received.first_audible_after(speech_end) is not None  # audio deltas came


async def test_the_node_listeners_refuse_anyone_without_the_cluster_secret(cluster) -> None:
    _head, _workers, ingress = cluster
    assert ingress.cluster is not None
    endpoints = list(ingress.cluster.endpoints.values())
    assert len(endpoints) == 2 and all(e.realtime and e.wyoming for e in endpoints)
    async with aiohttp.ClientSession() as http:
        for node in endpoints:
            assert node.realtime is not None and node.wyoming is not None
            host, port = node.realtime
            for headers, status in (({}, 401), ({"Authorization": "Bearer guess"}, 403)):
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await http.ws_connect(f"http://{host}:{port}/v1/realtime", headers=headers)
                assert refused.value.status == status
            reader, writer = await asyncio.open_connection(*node.wyoming)
            writer.write(b'{"type": "describe", "data": {}}\n' + b" " * 64)
            answer = await asyncio.wait_for(reader.read(), 10)  # an error event, then closed
            writer.close()
            assert b'"error"' in answer and b"forbidden" in answer, answer


async def test_a_wyoming_client_through_the_ingress_gets_a_transcript(cluster, ask) -> None:
    from wyoming.asr import Transcribe, Transcript
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.client import AsyncTcpClient

    _head, _workers, ingress = cluster
    question = "What is the capital of France?"
    pcm = read_wav(ask(question))
    client = AsyncTcpClient("127.0.0.1", ingress.wyoming.port)
    client.read_timeout = 60
    await client.connect()
    try:
        await client.write_event(Transcribe(language="en").event())
        await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        for start in range(0, len(pcm), 1024):
            await client.write_event(AudioChunk(rate=16000, width=2, channels=1,
                                                audio=pcm[start : start + 1024].tobytes()).event())
        await client.write_event(AudioStop().event())
        event = await client.read_event()
    finally:
        await client.disconnect()
    assert event is not None and Transcript.is_type(event.type), event
    assert wer(question, Transcript.from_event(event).text) <= 0.2, event


async def test_placed_across_nodes_refused_when_full_and_the_survivor_keeps_talking(
        cluster, ask) -> None:
    head, workers, ingress = cluster
    question = read_wav(ask("What is the capital of France?"))
    await _until_idle(ingress.url)  # (the Realtime and Wyoming tests' sessions are over)
    a, node_a = await _connect(ingress.url)
    b, node_b = await _connect(ingress.url)
    assert {node_a, node_b} == set(ingress.nodes())  # one on each: least loaded first
    c, _ = await _connect(ingress.url)
    d, _ = await _connect(ingress.url)
    status, headers, body = await _post_offer(ingress.url)  # both nodes hold 2 of 2
    assert status == 503 and headers.get("Retry-After") == "5", body
    assert "full" in body["error"]
    async with aiohttp.ClientSession() as http:  # Realtime: refused before the upgrade
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(f"{ingress.url}/v1/realtime")
    assert refused.value.status == 503 and refused.value.headers is not None
    assert refused.value.headers.get("Retry-After") == "5"
    reader, writer = await asyncio.open_connection("127.0.0.1", ingress.wyoming.port)
    answer = await asyncio.wait_for(reader.read(), 10)  # Wyoming: an error event, closed
    writer.close()
    assert b'"busy"' in answer and b"full" in answer, answer
    await c.close()
    await d.close()

    # A real spoken question, answered through the ingress by the node that holds it.
    turn = await _ask(a, question)
    assert "capital" in turn["transcript"].lower() and turn["reply"].strip()

    # The node holding A dies: A's conversation ends with it; B's goes on.
    lost = time.monotonic()
    head.remove_node(_node_of(node_a, workers))
    while True:
        status, _, body = await _post_offer(ingress.url)
        if status == 200 or time.monotonic() - lost > 5.0:
            break
        await asyncio.sleep(0.2)
    assert status == 200 and body["node"] == node_b, body
    await asyncio.sleep(1.0)
    turn = await _ask(b, question)
    assert "capital" in turn["transcript"].lower() and turn["reply"].strip()

    # Drain: no new conversation on the survivor, but B still talks.
    from app.cluster.run import drain

    assert await asyncio.to_thread(drain, node_b)
    status, headers, body = await _post_offer(ingress.url)
    assert status == 503 and "draining" in body["error"] and headers.get("Retry-After")
    turn = await _ask(b, question)
    assert turn["reply"].strip()
    await asyncio.to_thread(drain, node_b, undo=True)

    async with aiohttp.ClientSession() as http:
        async with http.get(f"{ingress.url}/api/turns") as response:
            turns = (await response.json())["turns"]
        async with http.get(f"{ingress.url}/metrics") as response:
            metrics = await response.text()
    assert {t["node"] for t in turns} <= {node_a, node_b} and len(turns) >= 2
    assert f'node="{node_b}"' in metrics
    await a.close()
    await b.close()
