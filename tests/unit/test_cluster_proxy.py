"""`/v1/realtime` at the cluster's ingress (app.cluster.realtime, app.cluster.proxy) with
the real placement book and fake nodes: websocket servers that echo, close with a code
or refuse. Frames pass both ways unchanged, a close on either side closes the other with
its code, no task is left behind, and placement refuses, skips and forgets as for offers.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import WSMsgType, web
from aiohttp.test_utils import TestClient, TestServer

from app.cluster.ingress import make_ingress
from app.cluster.listeners import Endpoints, only_ingress
from app.cluster.placement import NodeReport, Placement
from app.cluster.realtime import PIPES
from app.cluster.routing import CLUSTER, Cluster
from app.security.access import AccessPolicy
from app.security.limits import Refused, refusals
from tests.unit.test_cluster_ingress import Actor

pytestmark = pytest.mark.timeout(20)

SECRET = "cluster-secret"


@dataclass
class FakeNode:
    """A node's Realtime listener: echoes text as "echo:…", binary reversed; "close N"
    closes with N; remembers each close code it received and what it was asked."""

    busy: bool = False
    closes: list[int | None] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)

    async def realtime(self, request: web.Request) -> web.WebSocketResponse:
        if self.busy:
            raise Refused(503, "server full", {"Retry-After": "5"}, kind="full")
        self.queries.append(request.query_string)
        ws = web.WebSocketResponse(timeout=1.0)
        await ws.prepare(request)
        async for message in ws:
            if message.type is WSMsgType.TEXT and message.data.startswith("close "):
                await ws.close(code=int(message.data.split()[1]), message=b"bye")
            elif message.type is WSMsgType.TEXT:
                await ws.send_str(f"echo:{message.data}")
            elif message.type is WSMsgType.BINARY:
                await ws.send_bytes(message.data[::-1])
        self.closes.append(ws.close_code)
        return ws


async def node_server(node: FakeNode) -> TestServer:
    app = web.Application(middlewares=[refusals(), only_ingress(SECRET)])
    app.router.add_get("/v1/realtime", node.realtime)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    return server


@dataclass
class Setup:
    client: TestClient
    book: Placement
    nodes: dict[str, FakeNode]
    forgotten: list[str]


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    book = Placement()
    nodes = {"a": FakeNode(), "b": FakeNode()}
    servers = {name: await node_server(node) for name, node in nodes.items()}
    for name in nodes:
        book.report(NodeReport(name, 0, 2))
    forgotten: list[str] = []
    cluster = Cluster(Actor(book), {n: object() for n in nodes}, forgotten=forgotten.append,
                      endpoints={n: Endpoints(realtime=("127.0.0.1", s.port or 0))
                                 for n, s in servers.items()}, secret=SECRET)
    client = TestClient(TestServer(make_ingress(cluster), host="127.0.0.1"))
    await client.start_server()
    yield Setup(client, book, nodes, forgotten)
    await client.close()
    for server in servers.values():
        await server.close()


def pipe_tasks() -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("pipe-")]


async def until_closed(node: FakeNode, count: int = 1) -> None:
    async with asyncio.timeout(3):
        while len(node.closes) < count:
            await asyncio.sleep(0.01)


async def test_text_and_binary_frames_pass_both_ways_unchanged(setup: Setup) -> None:
    async with setup.client.ws_connect("/v1/realtime?apace_events=1&x=y") as ws:
        await ws.send_str('{"type": "session.update"}')
        assert (await ws.receive()).data == 'echo:{"type": "session.update"}'
        await ws.send_bytes(b"\x00\x01\x02")
        message = await ws.receive()
        assert message.type is WSMsgType.BINARY and message.data == b"\x02\x01\x00"
    assert setup.nodes["a"].queries == ["apace_events=1"]  # only what the node reads


async def test_the_client_closing_closes_the_node_with_its_code(setup: Setup) -> None:
    ws = await setup.client.ws_connect("/v1/realtime")
    await ws.send_str("hello")
    await ws.receive()
    await ws.close(code=4000)
    await until_closed(setup.nodes["a"])
    assert setup.nodes["a"].closes == [4000]
    async with asyncio.timeout(3):
        while pipe_tasks() or setup.client.app[PIPES].live:
            await asyncio.sleep(0.01)


async def test_the_node_closing_closes_the_client_with_its_code_and_reason(setup: Setup) -> None:
    ws = await setup.client.ws_connect("/v1/realtime")
    await ws.send_str("close 4001")
    message = await ws.receive()
    assert message.type is WSMsgType.CLOSE and message.data == 4001 and message.extra == "bye"
    await ws.close()
    async with asyncio.timeout(3):
        while pipe_tasks() or setup.client.app[PIPES].live:
            await asyncio.sleep(0.01)


async def test_a_client_gone_without_a_close_frame_ends_the_node_session(setup: Setup) -> None:
    ws = await setup.client.ws_connect("/v1/realtime")
    await ws.send_str("hello")
    await ws.receive()
    ws._response.connection.transport.abort()  # type: ignore[union-attr]
    await until_closed(setup.nodes["a"])
    assert setup.nodes["a"].closes[0] in (1001, 1011)
    async with asyncio.timeout(3):
        while pipe_tasks():
            await asyncio.sleep(0.01)


async def test_a_full_cluster_refuses_before_the_upgrade_with_retry_after(setup: Setup) -> None:
    for name in setup.nodes:
        setup.book.report(NodeReport(name, 2, 2))
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await setup.client.ws_connect("/v1/realtime")
    assert refused.value.status == 503 and refused.value.headers is not None
    assert refused.value.headers["Retry-After"] == "5"
    response = await setup.client.get("/v1/realtime", headers={
        "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
    assert response.status == 503 and "full" in (await response.json())["error"]


async def test_a_node_whose_admission_refuses_is_passed_over(setup: Setup) -> None:
    setup.nodes["a"].busy = True
    async with setup.client.ws_connect("/v1/realtime") as ws:
        await ws.send_str("hi")
        assert (await ws.receive()).data == "echo:hi"
    assert setup.nodes["b"].queries == [""] and not setup.forgotten
    assert [n["held"] for n in setup.book.view()] == [0, 0]  # both holds settled


async def test_an_unreachable_node_is_forgotten_and_the_next_one_takes_the_client(
        setup: Setup) -> None:
    endpoints = dict(setup.client.app[CLUSTER].endpoints)
    endpoints["a"] = Endpoints(realtime=("127.0.0.1", 1))  # nothing listens there
    setup.client.app[CLUSTER].endpoints = endpoints
    async with setup.client.ws_connect("/v1/realtime") as ws:
        await ws.send_str("hi")
        assert (await ws.receive()).data == "echo:hi"
    assert setup.forgotten == ["a"] and [n["node"] for n in setup.book.view()] == ["b"]


async def test_a_plain_get_is_told_to_upgrade(setup: Setup) -> None:
    response = await setup.client.get("/v1/realtime")
    assert response.status == 426 and response.headers["Upgrade"] == "websocket"


async def test_the_ingress_shutting_down_closes_both_sides_going_away(setup: Setup) -> None:
    ws = await setup.client.ws_connect("/v1/realtime")
    await ws.send_str("hello")
    await ws.receive()
    await setup.client.app[PIPES].close_all()
    message = await ws.receive()
    assert message.type is WSMsgType.CLOSE and message.data == 1001
    await until_closed(setup.nodes["a"])
    assert setup.nodes["a"].closes == [1001] and not pipe_tasks()


async def test_realtime_needs_the_ingress_credential_and_nothing_reaches_a_node() -> None:
    book = Placement()
    book.report(NodeReport("a", 0, 2))
    node = FakeNode()
    server = await node_server(node)
    cluster = Cluster(Actor(book), {"a": object()}, secret=SECRET,
                      endpoints={"a": Endpoints(realtime=("127.0.0.1", server.port or 0))})
    policy = AccessPolicy(hosts=frozenset({"127.0.0.1"}), token="s3cret")
    client = TestClient(TestServer(make_ingress(cluster, policy), host="127.0.0.1"))
    await client.start_server()
    try:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await client.ws_connect("/v1/realtime")
        assert refused.value.status == 401 and node.queries == []
        async with client.ws_connect("/v1/realtime",
                                     headers={"Authorization": "Bearer s3cret"}) as ws:
            await ws.send_str("hi")
            assert (await ws.receive()).data == "echo:hi"
    finally:
        await client.close()
        await server.close()


async def test_a_clients_close_is_answered_once_its_node_has_reported(setup: Setup) -> None:
    """A client that hangs up and calls again at once must be placed on fresh counts: the
    ingress answers its close only after the node's side closed and the node reported."""
    reports: list[int] = []

    class NodeActor:
        async def report_now(self) -> None:
            reports.append(len(setup.nodes["a"].closes))
            await asyncio.sleep(0.2)

    setup.client.app[CLUSTER].nodes = {"a": Actor(NodeActor()), "b": Actor(NodeActor())}
    ws = await setup.client.ws_connect("/v1/realtime")
    await ws.send_str("hello")
    await ws.receive()
    loop = asyncio.get_running_loop()
    started = loop.time()
    await ws.close()
    assert loop.time() - started >= 0.2  # the close waited for the report
    assert len(reports) == 1
    await until_closed(setup.nodes["a"])
