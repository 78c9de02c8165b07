"""A node's own listeners for the ways in that are not WebRTC: its `/v1/realtime` (the
single box's route and sessions, on the node's engine and `Sessions`) and, when the
cluster serves Home Assistant, its Wyoming server. The ingress places each Realtime or
Wyoming client on a node and pipes it here (app.cluster.realtime, app.cluster.wyoming).

These listeners are on the cluster's network, so they answer the ingress only, which
proves itself with the cluster secret that `apace cluster serve` makes at start-up and
hands to every node actor it creates:

- Realtime: `Authorization: Bearer SECRET` on the upgrade; no credential is a 401, a
  wrong one a 403, before any session starts.
- Wyoming has no authentication of its own, so the ingress opens each piped stream with
  one line, `apace-cluster SECRET\\n`, which the node reads (within a few seconds, a fixed
  number of bytes) and strips, answering `apace-cluster ok\\n` before the Wyoming stream
  starts; anything else gets a Wyoming `error` event and the connection is closed. Binding
  the port to the ingress's address instead would not do: on a shared machine (or every
  node on one box) that address is everyone's.

The secret travels in clear on the cluster's network, as Ray's own traffic does: the
cluster's machines must be on a network users cannot reach (docs/cluster.md).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from aiohttp import web

from app.appkeys import SESSIONS
from app.security.limits import Refused, refusals
from app.transports.realtime.route import add_realtime

if TYPE_CHECKING:
    from app.server import Sessions
    from app.transports.wyoming.info import ProgramNames
    from app.transports.wyoming.server import Gate, WyomingOptions, WyomingServer
    from pipeline.engine import Engine

log = logging.getLogger(__name__)

HELLO = b"apace-cluster "
WELCOME = b"apace-cluster ok\n"
HANDSHAKE_TIMEOUT_S = 5.0
"""The ingress writes its line at once; a peer that does not is not the ingress."""


@dataclass(frozen=True)
class Endpoints:
    """Where a node's listeners are: (host, port) each, None when it has none."""

    realtime: tuple[str, int] | None = None
    wyoming: tuple[str, int] | None = None


@dataclass(frozen=True, kw_only=True)
class ListenerOptions:
    """What a node needs to open its listeners (handed to its actor by the supervisor)."""

    secret: str
    host: str = "127.0.0.1"
    """The address to bind: the one the ingress reaches this machine at (Ray's)."""
    wyoming: WyomingOptions | None = None
    """Serve Wyoming too (the cluster's `--wyoming PORT`); host, port and allow are the
    node's own, whatever these say."""
    make_names: Callable[[Engine], ProgramNames] | None = None
    """What Wyoming's `info` calls this node's models (default: generic names)."""


def hello(secret: str) -> bytes:
    """The line the ingress opens a Wyoming stream to a node with."""
    return HELLO + secret.encode() + b"\n"


def bearer_refusal(header: str, secret: str) -> Refused | None:
    """Why an upgrade with this Authorization header is not the ingress's, or None."""
    scheme, _, value = header.partition(" ")
    if not value:
        return Refused(401, "this listener serves the cluster's ingress only",
                       {"WWW-Authenticate": 'Bearer realm="apace-node"'}, kind="access")
    if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(),
                                                             secret.encode()):
        return Refused(403, "wrong cluster secret", kind="access")
    return None


def only_ingress(secret: str) -> Any:
    """The middleware closing a node's HTTP listener to all but the ingress."""

    @web.middleware
    async def check(request: web.Request, handler: Any) -> web.StreamResponse:
        refusal = bearer_refusal(request.headers.get("Authorization", ""), secret)
        if refusal is not None:
            raise refusal
        response: web.StreamResponse = await handler(request)
        return response

    return check


def wyoming_gate(secret: str) -> Gate:
    """The node's Wyoming gate: the ingress's line, else a refusal's reason."""
    expected = hello(secret)

    async def gate(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str | None:
        try:
            async with asyncio.timeout(HANDSHAKE_TIMEOUT_S):
                line = await reader.readexactly(len(expected))
        except (TimeoutError, asyncio.IncompleteReadError):
            line = b""
        if not hmac.compare_digest(line, expected):
            return "this port serves the cluster's ingress only"
        writer.write(WELCOME)
        await writer.drain()
        return None

    return gate


def node_app(sessions: Sessions, secret: str) -> web.Application:
    """A node's HTTP listener: `/v1/realtime` on its sessions, for the ingress only."""
    app = web.Application(middlewares=[refusals(sessions.count_refusal), only_ingress(secret)])
    app[SESSIONS] = sessions
    add_realtime(app)  # its sessions count in the node's cap, admission and reports
    return app


class NodeListeners:
    """A node's Realtime listener and, when asked for, its Wyoming server."""

    def __init__(self, options: ListenerOptions) -> None:
        self.options = options
        self._runner: web.AppRunner | None = None
        self._wyoming: WyomingServer | None = None

    async def start(self, sessions: Sessions) -> Endpoints:
        """Listen on free ports of `options.host`; where they are. Raises ValueError
        naming the address when that fails."""
        host = self.options.host
        runner = web.AppRunner(node_app(sessions, self.options.secret), handle_signals=False,
                               auto_decompress=False, shutdown_timeout=3.0)
        await runner.setup()
        self._runner = runner
        site = web.TCPSite(runner, host, 0)
        try:
            await site.start()
        except OSError as error:
            raise ValueError(f"cannot listen on {host} for Realtime: {error.strerror}") from None
        port = runner.addresses[0][1]
        return Endpoints(realtime=(host, port), wyoming=await self._start_wyoming(sessions))

    async def _start_wyoming(self, sessions: Sessions) -> tuple[str, int] | None:
        if self.options.wyoming is None:
            return None
        from app.transports.wyoming.info import ProgramNames
        from app.transports.wyoming.server import WyomingServer

        engine = sessions.engine
        make_names = self.options.make_names
        names = make_names(engine) if make_names is not None else ProgramNames()
        options = replace(self.options.wyoming, host=self.options.host, port=0, allow=())
        server = WyomingServer(engine, names, options, gate=wyoming_gate(self.options.secret))
        await server.start()
        self._wyoming = server
        sessions.others.append(lambda: server.admitted)  # counted like any session
        return (self.options.host, server.port)

    async def close(self) -> None:
        """End every Realtime and Wyoming client of this node and stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()  # (each Realtime client: an error event, then 1001)
            self._runner = None
        if self._wyoming is not None:
            await self._wyoming.close()
            self._wyoming = None
