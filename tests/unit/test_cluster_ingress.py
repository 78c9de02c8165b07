"""The cluster's ingress (app.cluster.ingress) with the placement book and fake node
actors: an offer is placed, a failing node is forgotten and the next one tried, a node's
own refusal passes the offer on, nothing is forwarded without the credential."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from app.cluster.ingress import Cluster, make_ingress
from app.cluster.placement import NodeReport, Placement
from app.security.access import AccessPolicy
from tests.offers import CHROME_OFFER

OFFER = {"sdp": CHROME_OFFER, "type": "offer"}


class Remote:
    """`actor.method.remote(...)` for a plain function (or coroutine function)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def remote(self, *args: Any) -> Any:
        return self.fn(*args)


class Actor:
    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def __getattr__(self, name: str) -> Remote:
        return Remote(getattr(self._obj, name))


class Node:
    def __init__(self, name: str, *, dead: bool = False, status: int = 200) -> None:
        self.name, self.dead, self.status, self.offers = name, dead, status, 0

    async def offer(self, data: dict[str, Any]) -> dict[str, Any]:
        self.offers += 1
        if self.dead:
            raise RuntimeError("the actor died")  # what a RayActorError is to the ingress
        if self.status != 200:
            return {"status": self.status, "body": {"error": "server busy"},
                    "headers": {"Retry-After": "5"}}
        return {"status": 200, "body": {"sdp": "answer", "type": "answer", "node": self.name},
                "headers": {}}


@pytest.fixture
async def setup() -> AsyncIterator[tuple[Any, Placement, dict[str, Node], list[str]]]:
    book = Placement()
    nodes = {"a": Node("a"), "b": Node("b")}
    for name in nodes:
        book.report(NodeReport(name, 0, 2))
    forgotten: list[str] = []
    cluster = Cluster(Actor(book), {n: Actor(node) for n, node in nodes.items()},
                      forgotten=forgotten.append)
    client = TestClient(TestServer(make_ingress(cluster), host="127.0.0.1"))
    await client.start_server()
    yield client, book, nodes, forgotten
    await client.close()


async def test_an_offer_goes_to_the_least_loaded_node(setup) -> None:
    client, book, _nodes, _ = setup
    book.report(NodeReport("a", 1, 2))
    response = await client.post("/offer", json=OFFER)
    assert response.status == 200 and (await response.json())["node"] == "b"


async def test_a_dead_node_is_forgotten_and_the_offer_lands_on_the_next(setup) -> None:
    client, book, nodes, forgotten = setup
    nodes["a"].dead = True  # "a" is chosen first (a tie goes by name)
    response = await client.post("/offer", json=OFFER)
    assert response.status == 200 and (await response.json())["node"] == "b"
    assert forgotten == ["a"] and [n["node"] for n in book.view()] == ["b"]


async def test_a_nodes_own_refusal_passes_the_offer_on_and_all_refusing_is_a_503(setup) -> None:
    client, _book, nodes, _ = setup
    nodes["a"].status = 503
    response = await client.post("/offer", json=OFFER)
    assert (await response.json())["node"] == "b"
    nodes["b"].status = 503
    response = await client.post("/offer", json=OFFER)
    assert response.status == 503 and response.headers["Retry-After"] == "5"
    assert "server busy" in (await response.json())["error"]


async def test_bad_offers_are_refused_at_the_ingress_and_never_forwarded(setup) -> None:
    client, _, nodes, _ = setup
    for body in ({"sdp": 3, "type": "offer"}, {"sdp": "v=0", "type": "answer"}):
        response = await client.post("/offer", json=body)
        assert response.status == 400
    response = await client.post("/offer", data=b"not json",
                                 headers={"Content-Type": "text/plain"})
    assert response.status == 415
    assert sum(node.offers for node in nodes.values()) == 0


async def test_the_ingress_is_closed_to_those_without_the_credential() -> None:
    book = Placement()
    book.report(NodeReport("a", 0, 2))
    node = Node("a")
    cluster = Cluster(Actor(book), {"a": Actor(node)})
    policy = AccessPolicy(hosts=frozenset({"127.0.0.1"}), token="s3cret")
    client = TestClient(TestServer(make_ingress(cluster, policy), host="127.0.0.1"))
    await client.start_server()
    try:
        for path in ("/api/turns", "/api/nodes", "/metrics"):
            assert (await client.get(path)).status == 401
        assert (await client.post("/offer", json=OFFER)).status == 401
        assert node.offers == 0
        authorized = {"Authorization": "Bearer s3cret"}
        response = await client.post("/offer", json=OFFER, headers=authorized)
        assert response.status == 200
    finally:
        await client.close()
