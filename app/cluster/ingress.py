"""The cluster's one address: the page, `/offer` routed to a node, and the dashboard,
`/api/*` and `/metrics` merged across nodes.

Only signalling passes here. An offer is checked as the single box checks it, a slot is
held on the node the placement book chooses, and the offer goes to that node's actor; the
node's SDP answer (its own host candidates) comes back, so media flows browser ↔ node.
A node that fails while answering is forgotten and the offer tried on the next one. The
same access rules and refusal answers as `apace serve` (app.security) guard every route.

The ingress is a plain aiohttp application in the `apace cluster serve` process rather
than a Ray Serve deployment: it is one hop (no Serve proxy in front), reuses the single
box's access middleware and refusals unchanged, and starts in well under a second
(docs/cluster.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from app import dashboard as dash
from app.cluster.merge import merged_metrics, merged_stats, node_turns
from app.cluster.placement import Refusal
from app.prometheus import CONTENT_TYPE
from app.security import access as acl
from app.security.limits import Refused, parse_json, read_body, refusals
from app.security.pairing import ACCESS, pair, pair_page
from app.server import MAX_OFFER_BYTES, WEB_DIR, parse_offer

log = logging.getLogger(__name__)

ATTEMPTS = 3
"""Nodes an offer is tried on before the client is told to retry."""
OFFER_TIMEOUT_S = 10.0
"""A node that has not answered an offer in this long is taken for failed."""
BOOK_TIMEOUT_S = 5.0
"""The placement actor answers in a millisecond; this long means it is being restarted."""
POLL_S = 1.0
"""How often the merged dashboard feed asks the nodes for new turns."""
SEEN_TURNS = 10_000
"""Turns the merged feed remembers having pushed (far more than the nodes keep)."""


@dataclass
class Cluster:
    """What the ingress reaches through Ray: the placement book and the node actors
    (anything whose methods have `.remote(...)` returning an awaitable)."""

    placement: Any
    nodes: Mapping[str, Any]
    """Node name → its actor, kept current by the supervisor (app.cluster.control)."""
    retry_after_s: int = 5
    slo_ttfa_ms: float = 800.0
    hub: dash.Hub = field(default_factory=dash.Hub)
    forgotten: Callable[[str], None] = lambda _node: None
    """Told when the ingress finds a node dead (the supervisor drops its actor)."""


CLUSTER: web.AppKey[Cluster] = web.AppKey("cluster")


async def call(method: Any, *args: Any, timeout: float | None = None) -> Any:
    """`actor.method.remote(*args)`, awaited (with a timeout)."""
    result = method.remote(*args)
    if hasattr(result, "__await__"):
        return await asyncio.wait_for(_wait(result), timeout)
    return result


async def _wait(ref: Any) -> Any:
    return await ref


async def offer(request: web.Request) -> web.Response:
    cluster = request.app[CLUSTER]
    if request.content_type != "application/json":
        raise Refused(415, f"send the offer as application/json, not "
                           f"{request.content_type[:64]!r}")
    data = parse_json(await read_body(request, limit=MAX_OFFER_BYTES), max_bytes=MAX_OFFER_BYTES)
    parse_offer(data)  # nothing malformed is forwarded
    return await place(cluster, data)


async def place(cluster: Cluster, data: dict[str, Any]) -> web.Response:
    """Hold a slot, forward the offer there; on a failed node, the next one."""
    retry = {"Retry-After": str(cluster.retry_after_s)}
    last = "no node answered"
    tried: list[str] = []
    for _ in range(ATTEMPTS):
        placed = await _book(cluster, "reserve", tried)
        if isinstance(placed, Refusal):
            if tried:  # the nodes left refused it, or there are none left
                break
            raise Refused(503, f"cluster {placed.reason}; try again later", retry,
                          kind=placed.kind)
        node, hold = placed
        tried.append(node)
        actor = cluster.nodes.get(node)
        answer: dict[str, Any] | None = None
        try:
            if actor is not None:
                answer = await call(actor.offer, data, timeout=OFFER_TIMEOUT_S)
        except Exception as error:  # the actor died (RayActorError), or hangs
            log.warning("node %s failed an offer (%s): forgetting it", node,
                        type(error).__name__)
        finally:
            placed_ok = answer is not None and answer["status"] == 200
            await _book(cluster, "settle", node, hold, placed_ok)
        if answer is None:
            await _forget(cluster, node)
            last = f"node {node} failed"
            continue
        if answer["status"] == 503:  # its own admission refused: another node may not
            last = answer["body"]["error"]
            continue
        return web.json_response(answer["body"], status=answer["status"],
                                 headers=answer.get("headers") or {})
    raise Refused(503, f"no node could take the conversation ({last}); try again later",
                  retry, kind="full")


async def _book(cluster: Cluster, method: str, *args: Any) -> Any:
    """A call on the placement book; while it is being restarted, 503 with Retry-After."""
    try:
        return await call(getattr(cluster.placement, method), *args, timeout=BOOK_TIMEOUT_S)
    except Exception as error:
        log.warning("placement %s failed: %s", method, type(error).__name__)
        raise Refused(503, "the cluster's placement is restarting; try again shortly",
                      {"Retry-After": str(cluster.retry_after_s)}, kind="none") from None


async def _forget(cluster: Cluster, node: str) -> None:
    cluster.forgotten(node)
    await _book(cluster, "forget", node)


async def _each_node(cluster: Cluster, method: str) -> dict[str, Any]:
    """`method` of every node that answers within a second (a dead one is left out)."""
    names = list(cluster.nodes)
    results = await asyncio.gather(
        *(call(getattr(cluster.nodes[name], method), timeout=1.0) for name in names),
        return_exceptions=True)
    return {name: result for name, result in zip(names, results, strict=True)
            if not isinstance(result, BaseException)}


async def api_turns(request: web.Request) -> web.Response:
    cluster = request.app[CLUSTER]
    return web.json_response({"turns": node_turns(await _each_node(cluster, "turns"))})


async def api_stats(request: web.Request) -> web.Response:
    return web.json_response(await _stats(request.app[CLUSTER]))


async def _stats(cluster: Cluster) -> dict[str, Any]:
    stats, turns = await asyncio.gather(_each_node(cluster, "stats"),
                                        _each_node(cluster, "turns"))
    nodes = await _book(cluster, "view")
    return merged_stats(stats, node_turns(turns), nodes, cluster.slo_ttfa_ms)


async def api_nodes(request: web.Request) -> web.Response:
    return web.json_response({"nodes": await _book(request.app[CLUSTER], "view")})


async def metrics(request: web.Request) -> web.Response:
    texts = await _each_node(request.app[CLUSTER], "metrics")
    return web.Response(body=merged_metrics(texts), headers={"Content-Type": CONTENT_TYPE})


async def feed(request: web.Request) -> web.WebSocketResponse:
    cluster = request.app[CLUSTER]
    stats = await _stats(cluster)
    return await dash.serve_feed(request, cluster.hub,
                                 lambda: {**stats, "dashboards": len(cluster.hub.clients)})


async def health(request: web.Request) -> web.Response:
    """Liveness, and the cluster's sessions and resident memory summed over its nodes
    (what `apace bench --sessions --url` reads, as from a single box)."""
    cluster = request.app[CLUSTER]
    nodes, healths = await asyncio.gather(_book(cluster, "view"), _each_node(cluster, "health"))
    return web.json_response({
        "ok": True, "nodes": len(nodes),
        "sessions": sum(h["sessions"] for h in healths.values()),
        "rss_bytes": sum(h.get("rss_bytes") or 0 for h in healths.values()) or None})


async def _poll_feed(cluster: Cluster) -> None:
    """Push new turns and the merged stats to the dashboards once a second."""
    seen: OrderedDict[tuple[str, int], None] = OrderedDict()
    while True:
        await asyncio.sleep(POLL_S)
        if not cluster.hub.clients:
            continue
        try:
            turns = node_turns(await _each_node(cluster, "turns"))
            for turn in turns:
                key = (str(turn["session"]), int(turn["turn"]))
                if key not in seen:
                    seen[key] = None
                    cluster.hub.publish(turn)
            while len(seen) > SEEN_TURNS:  # (the nodes keep their last 200 turns each)
                seen.popitem(last=False)
            cluster.hub.publish(dash.stats_message(await _stats(cluster)))
        except Exception:  # a node went away mid-poll: the next poll goes on
            log.warning("dashboard poll failed", exc_info=True)


async def index(_request: web.Request) -> web.FileResponse:
    return web.FileResponse(WEB_DIR / "index.html")


async def dashboard(_request: web.Request) -> web.FileResponse:
    return web.FileResponse(WEB_DIR / "dashboard.html")


def make_ingress(cluster: Cluster, access: acl.AccessPolicy | None = None) -> web.Application:
    """The ingress application. `access` as for `apace serve` (loopback's by default)."""
    policy = access or acl.AccessPolicy()
    app = web.Application(client_max_size=MAX_OFFER_BYTES,
                          middlewares=[refusals(), acl.middleware(policy)])
    app[CLUSTER] = cluster
    app[ACCESS] = policy
    app.on_response_prepare.append(acl.security_headers)
    app.router.add_get("/", index)
    app.router.add_get("/pair", pair_page)
    app.router.add_post("/pair", pair)
    app.router.add_get("/dashboard", dashboard)
    app.router.add_static("/static", WEB_DIR)
    app.router.add_post("/offer", offer)
    app.router.add_get("/api/turns", api_turns)
    app.router.add_get("/api/stats", api_stats)
    app.router.add_get("/api/nodes", api_nodes)
    app.router.add_get("/ws/dashboard", feed)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", health)

    async def background(_app: web.Application) -> AsyncIterator[None]:
        poller = asyncio.create_task(_poll_feed(cluster), name="cluster-dashboard")
        try:
            yield
        finally:
            cluster.hub.close_all("cluster ingress shutting down")
            poller.cancel()
            await asyncio.wait([poller])

    app.cleanup_ctx.append(background)
    return app
