"""A node's own listeners (app.cluster.listeners) with the real Engine on fake models, and
the ingress in front of them (app.cluster.realtime, app.cluster.wyoming) with the real
placement book: only the cluster secret opens them; through the ingress a Realtime
client is answered and a Wyoming client described to; Wyoming's peer rule, refusals and
the byte pipe's half-close."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from app.cluster.ingress import make_ingress
from app.cluster.listeners import (
    WELCOME,
    Endpoints,
    ListenerOptions,
    NodeListeners,
    bearer_refusal,
    hello,
)
from app.cluster.placement import NodeReport, Placement
from app.cluster.proxy import pipe_streams
from app.cluster.routing import Cluster
from app.cluster.wyoming import WyomingIngress
from app.server import ServerOptions, Sessions
from app.transports.wyoming.protocol import Event
from app.transports.wyoming.server import WyomingOptions
from tests.transports import FakeEngine, fake_engine
from tests.unit.realtime_harness import rt_client, speech
from tests.unit.test_cluster_ingress import Actor
from tests.unit.test_wyoming_server import Raw

pytestmark = pytest.mark.timeout(20)

SECRET = "the-cluster-secret"


def test_the_node_asks_for_the_secret_and_tells_a_missing_one_from_a_wrong_one() -> None:
    missing, wrong = bearer_refusal("", SECRET), bearer_refusal("Bearer nope", SECRET)
    assert missing is not None and missing.status == 401
    assert wrong is not None and wrong.status == 403
    assert bearer_refusal(f"Basic {SECRET}", SECRET) is not None
    assert bearer_refusal(f"bearer {SECRET}", SECRET) is None


@dataclass
class Node:
    fake: FakeEngine
    sessions: Sessions
    endpoints: Endpoints


@pytest.fixture
async def node() -> AsyncIterator[Node]:
    fake = fake_engine(["What is up?"], ["All good."])
    sessions = Sessions(fake.engine, ServerOptions(max_sessions=2))
    listeners = NodeListeners(ListenerOptions(secret=SECRET, wyoming=WyomingOptions()))
    endpoints = await listeners.start(sessions)
    yield Node(fake, sessions, endpoints)
    await listeners.close()
    fake.close()


def url(endpoint: tuple[str, int] | None) -> str:
    assert endpoint is not None
    return f"ws://{endpoint[0]}:{endpoint[1]}/v1/realtime"


async def test_the_nodes_realtime_listener_refuses_all_but_the_secret(node: Node) -> None:
    async with aiohttp.ClientSession() as http:
        for headers, status in (({}, 401), ({"Authorization": "Bearer guess"}, 403)):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await http.ws_connect(url(node.endpoints.realtime), headers=headers)
            assert refused.value.status == status
    assert node.sessions.open_sessions() == 0
    async with rt_client(url(node.endpoints.realtime), Authorization=f"Bearer {SECRET}"):
        assert node.sessions.open_sessions() == 1  # counted in the node's cap and reports


async def test_the_nodes_wyoming_listener_needs_the_handshake(node: Node) -> None:
    assert node.endpoints.wyoming is not None
    raw = Raw(*await asyncio.open_connection(*node.endpoints.wyoming))
    await raw.send(Event("describe"))  # what Home Assistant would send straight away
    refusal = await raw.next("error", timeout=8)
    assert refusal.data["code"] == "forbidden" and await raw.closed()
    raw.close()
    raw = Raw(*await asyncio.open_connection(*node.endpoints.wyoming))
    await raw.send(raw=hello(SECRET))
    assert await raw.reader.readexactly(len(WELCOME)) == WELCOME
    assert node.sessions.open_sessions() == 1
    await raw.send(Event("describe"))
    assert (await raw.next("info")).data["asr"]
    raw.close()


@contextlib.asynccontextmanager
async def ingress(node: Node, book: Placement, allow: tuple[str, ...] = ()
                  ) -> AsyncIterator[tuple[TestClient, WyomingIngress]]:
    cluster = Cluster(Actor(book), {"a": object()}, secret=SECRET,
                      endpoints={"a": node.endpoints})
    client = TestClient(TestServer(make_ingress(cluster), host="127.0.0.1"))
    await client.start_server()
    wyoming = WyomingIngress(cluster, WyomingOptions(port=0, allow=allow))
    await wyoming.start()
    try:
        yield client, wyoming
    finally:
        await wyoming.close()
        await client.close()


async def test_a_realtime_client_through_the_ingress_is_answered_by_the_node(node: Node) -> None:
    book = Placement()
    book.report(NodeReport("a", 0, 2))
    async with ingress(node, book) as (client, _):
        async with rt_client(str(client.make_url("/v1/realtime")).replace("http", "ws")) as rt:
            assert node.sessions.open_sessions() == 1
            await rt.append(speech())
            done = await rt.next("response.done")
            assert done["response"]["output"][0]["content"][0]["transcript"] == "All good."


async def test_a_wyoming_client_through_the_ingress_is_piped_to_the_node(node: Node) -> None:
    book = Placement()
    book.report(NodeReport("a", 0, 2))
    async with ingress(node, book) as (_, wyoming):
        raw = Raw(*await asyncio.open_connection("127.0.0.1", wyoming.port))
        await raw.send(Event("describe"))
        assert (await raw.next("info")).data["handle"]
        assert [n["held"] for n in book.view()] == [0]
        raw.close()
        async with asyncio.timeout(3):  # the pipe ends with its client
            while wyoming.connections:
                await asyncio.sleep(0.01)


async def test_wyoming_at_the_ingress_keeps_the_peer_rule_and_says_when_it_is_full(
        node: Node) -> None:
    book = Placement()
    book.report(NodeReport("a", 0, 2))
    async with ingress(node, book, allow=("10.0.0.0/8",)) as (_, wyoming):
        raw = Raw(*await asyncio.open_connection("127.0.0.1", wyoming.port))
        assert (await raw.next("error")).data["code"] == "forbidden" and await raw.closed()
        raw.close()
    book.report(NodeReport("a", 2, 2))
    async with ingress(node, book) as (_, wyoming):
        raw = Raw(*await asyncio.open_connection("127.0.0.1", wyoming.port))
        refusal = await raw.next("error")
        assert refusal.data["code"] == "busy" and "full" in refusal.data["text"]
        assert await raw.closed()
        raw.close()


async def test_the_byte_pipe_passes_the_clients_end_on_and_still_brings_the_answer() -> None:
    async def answer_after_eof(reader: asyncio.StreamReader,
                               writer: asyncio.StreamWriter) -> None:
        asked = await reader.read()  # until the client's end of input
        writer.write(b"answer to " + asked)
        await writer.drain()
        writer.close()

    node_server = await asyncio.start_server(answer_after_eof, "127.0.0.1", 0)
    port = node_server.sockets[0].getsockname()[1]
    piped: list[asyncio.Task[None]] = []

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        piped.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            await pipe_streams((reader, writer), await asyncio.open_connection("127.0.0.1",
                                                                               port))
        finally:
            writer.close()

    front = await asyncio.start_server(pipe, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1",
                                                   front.sockets[0].getsockname()[1])
    writer.write(b"the question")
    writer.write_eof()
    assert await asyncio.wait_for(reader.read(), 3) == b"answer to the question"
    writer.close()
    async with asyncio.timeout(3):
        while not piped or not piped[0].done() or any(
                t.get_name().startswith("pipe-") for t in asyncio.all_tasks()):
            await asyncio.sleep(0.01)
    front.close()
    node_server.close()
