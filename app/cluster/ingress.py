"""The cluster's one address: the page, `/offer` routed to a node, `/v1/realtime` piped
to one, and the dashboard, `/api/*` and `/metrics` merged across nodes. (The Wyoming
port, beside it in the same process: app.cluster.wyoming.)

For WebRTC only signalling passes here. An offer is checked as the single box checks
it, a slot is held on the node the placement book chooses (app.cluster.routing), and the
offer goes to that node's actor; the node's SDP answer (its own host candidates) comes
back, so media flows browser ↔ node. A node that fails while answering is forgotten and
the offer tried on the next one. `/v1/realtime` is placed the same way and its websocket
piped to the node (app.cluster.realtime). The same access rules and refusal answers as
`apace serve` (app.security) guard every route.

The ingress is a plain aiohttp application in the `apace cluster serve` process rather
than a Ray Serve deployment: it is one hop (no Serve proxy in front), reuses the single
box's access middleware and refusals unchanged, and starts in well under a second
(docs/cluster.md).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from app.cluster.merge import merged_metrics, merged_stats, node_turns
from app.cluster.realtime import add_realtime
from app.cluster.routing import CLUSTER, Cluster, NodeBusy, book, call, place_on
from app.observe import dashboard as dash
from app.observe.prometheus import CONTENT_TYPE
from app.security import access as acl
from app.security.limits import Refused, parse_json, read_body, refusals
from app.security.pairing import ACCESS, pair, pair_page
from app.server import MAX_OFFER_BYTES, parse_offer
from app.web_dir import WEB_DIR

__all__ = ["CLUSTER", "Cluster", "make_ingress"]

log = logging.getLogger(__name__)

OFFER_TIMEOUT_S = 10.0
"""A node that has not answered an offer in this long is taken for failed."""
POLL_S = 1.0
"""How often the merged dashboard feed asks the nodes for new turns."""
SEEN_TURNS = 10_000
"""Turns the merged feed remembers having pushed (far more than the nodes keep)."""


async def offer(request: web.Request) -> web.Response:
    cluster = request.app[CLUSTER]
    if request.content_type != "application/json":
        raise Refused(415, f"send the offer as application/json, not "
                           f"{request.content_type[:64]!r}")
    data = parse_json(await read_body(request, limit=MAX_OFFER_BYTES), max_bytes=MAX_OFFER_BYTES)
    parse_offer(data)  # nothing malformed is forwarded
    return await place_on(cluster, functools.partial(_offer_on, cluster, data))


async def _offer_on(cluster: Cluster, data: dict[str, Any], node: str
                    ) -> tuple[web.Response, bool]:
    """Forward the offer to `node`'s actor: its answer, and whether a session opened."""
    actor = cluster.nodes.get(node)
    if actor is None:
        raise LookupError(f"node {node} has no actor")
    answer = await call(actor.offer, data, timeout=OFFER_TIMEOUT_S)
    if answer["status"] == 503:
        raise NodeBusy(answer["body"]["error"])
    return (web.json_response(answer["body"], status=answer["status"],
                              headers=answer.get("headers") or {}), answer["status"] == 200)


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
    nodes = await book(cluster, "view")
    return merged_stats(stats, node_turns(turns), nodes, cluster.slo_ttfa_ms)


async def api_nodes(request: web.Request) -> web.Response:
    return web.json_response({"nodes": await book(request.app[CLUSTER], "view")})


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
    nodes, healths = await asyncio.gather(book(cluster, "view"), _each_node(cluster, "health"))
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
    add_realtime(app)  # GET /v1/realtime: piped to a node's own (app.cluster.realtime)

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
