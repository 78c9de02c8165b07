"""`/v1/realtime` at the cluster's ingress: each Realtime client placed on a node and its
websocket piped to that node's own `/v1/realtime` (app.cluster.listeners).

The ingress's access rules apply before anything else (its middleware guards every
route: Host, Origin, the pairing token as the client's API key). Then, still before the
upgrade, a slot is held through the placement book exactly as for an offer, and the
node's websocket is opened with the cluster secret: a node that does not answer is
forgotten and the next one tried, one whose admission refuses is passed over, and when
none can take the client it gets the single box's 503 with `Retry-After` and the reason.
Only once the node has accepted is the client's upgrade answered; from then on frames
pass both ways unchanged, and either side closing closes the other with its code.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp
from aiohttp import ClientWebSocketResponse, web

from app.cluster.proxy import WebSocketPipe
from app.cluster.routing import CLUSTER, Cluster, NodeBusy, place_on, report_now
from app.security.limits import Refused
from app.transports.realtime.options import RealtimeOptions
from app.transports.realtime.route import PATH

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0
"""A node's listener that has not accepted the upgrade in this long is taken for failed."""
CLOSE_TIMEOUT_S = 3.0
"""How long a closing websocket waits for the other end's close frame."""
HEARTBEAT_S = 20.0
"""Pings on both legs, so a peer gone without a word is found (as the single box does)."""
MAX_NODE_MESSAGE_BYTES = 16 * 1024 * 1024
"""What a node may send in one message (its own limits keep them far smaller)."""


@dataclass
class Pipes:
    """The Realtime clients being piped, and the one HTTP client the node legs share."""

    live: set[WebSocketPipe] = field(default_factory=set)
    closing: bool = False
    http: aiohttp.ClientSession | None = None

    async def close_all(self, _app: web.Application | None = None) -> None:
        """Tell every client and node leg the ingress is going away (1001); wait (up to
        CLOSE_TIMEOUT_S) until each pipe has ended."""
        self.closing = True
        for pipe in list(self.live):
            pipe.end(reason="the cluster's ingress is shutting down")
        deadline = asyncio.get_running_loop().time() + CLOSE_TIMEOUT_S
        while self.live and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)


PIPES = web.AppKey("realtime_pipes", Pipes)


def add_realtime(app: web.Application) -> None:
    """Serve /v1/realtime on the ingress `app` (which holds the CLUSTER)."""
    pipes = Pipes()
    app[PIPES] = pipes
    app.router.add_get(PATH, realtime)
    app.on_shutdown.append(pipes.close_all)

    async def http_client(_app: web.Application) -> AsyncIterator[None]:
        pipes.http = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_S))
        try:
            yield
        finally:
            await pipes.http.close()

    app.cleanup_ctx.append(http_client)


async def realtime(request: web.Request) -> web.StreamResponse:
    cluster, pipes = request.app[CLUSTER], request.app[PIPES]
    # autoclose off: the client's close is answered once the node has reported its freed
    # slot (WebSocketPipe.before_client_closes), so a client that calls again at once is
    # not refused on the old count.
    ws = web.WebSocketResponse(max_msg_size=RealtimeOptions().max_message_bytes,
                               heartbeat=HEARTBEAT_S, timeout=CLOSE_TIMEOUT_S,
                               protocols=("realtime",), autoclose=False)
    if not ws.can_prepare(request).ok:
        raise Refused(426, "this endpoint is a WebSocket: connect with Upgrade: websocket "
                           "(an OpenAI Realtime client)", {"Upgrade": "websocket"})
    if pipes.closing or pipes.http is None:
        raise Refused(503, "the cluster's ingress is shutting down; try again shortly",
                      {"Retry-After": str(cluster.retry_after_s)}, kind="draining")
    query = {"apace_events": "1"} if request.query.get("apace_events") == "1" else {}
    placed: list[str] = []
    node = await place_on(cluster, functools.partial(_open_on, pipes.http, cluster, query,
                                                     placed=placed))
    try:
        await ws.prepare(request)
    except BaseException:
        await node.close(code=aiohttp.WSCloseCode.GOING_AWAY, message=b"the client left")
        raise
    pipe = WebSocketPipe(ws, node, functools.partial(report_now, cluster, placed[-1]))
    pipes.live.add(pipe)
    try:
        await pipe.run()
    finally:
        pipes.live.discard(pipe)
    return ws


async def _open_on(http: aiohttp.ClientSession, cluster: Cluster, query: dict[str, str],
                   node: str, *, placed: list[str]) -> tuple[ClientWebSocketResponse, bool]:
    """The node's Realtime websocket, opened with the cluster secret (a session is
    running there once it is open); `placed` gets the node's name."""
    placed.append(node)
    endpoints = cluster.endpoints.get(node)
    if endpoints is None or endpoints.realtime is None:
        raise LookupError(f"node {node} has no Realtime listener")
    host, port = endpoints.realtime
    url = f"http://{_bracketed(host)}:{port}{PATH}"
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            ws = await http.ws_connect(
                url, params=query, headers={"Authorization": f"Bearer {cluster.secret}"},
                heartbeat=HEARTBEAT_S, max_msg_size=MAX_NODE_MESSAGE_BYTES,
                timeout=aiohttp.ClientWSTimeout(ws_close=CLOSE_TIMEOUT_S))
    except aiohttp.WSServerHandshakeError as error:
        if error.status == 503:  # full, draining, or its load says no: try another
            raise NodeBusy(f"node {node} is busy") from None
        raise
    return ws, True


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host
