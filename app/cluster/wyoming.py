"""The cluster's Wyoming port (`apace cluster serve --wyoming PORT`): each Home Assistant
connection placed on a node and its bytes piped to that node's own Wyoming server.

The peer rule is the single box's (`--wyoming-allow`: only those networks; Wyoming has no
authentication). An allowed connection is placed through the placement book as an offer
is; the node's listener is opened with the cluster's one-line handshake and must answer
it (app.cluster.listeners) before a byte of the client's passes. A node that cannot be
reached or does not answer in time is forgotten and the next one tried; one that refuses
is passed over. A client that cannot be placed gets a Wyoming `error` event saying why
(code `busy`), as a full single box would answer, and the connection is closed.
"""

from __future__ import annotations

import asyncio
import functools
import logging

from app.cluster.listeners import WELCOME, hello
from app.cluster.proxy import close_stream, pipe_streams
from app.cluster.routing import Cluster, NodeBusy, place_on, report_now
from app.security.limits import Refused
from app.transports.listener import TcpListener
from app.transports.wyoming.server import WyomingOptions, networks, peer_refusal, refuse

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5.0
"""A node whose Wyoming listener has not answered the handshake in this long is failed."""

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class WyomingIngress(TcpListener):
    """Listens on `options.host`:`options.port` (its `allow` applies); `start`, `close`."""

    def __init__(self, cluster: Cluster, options: WyomingOptions) -> None:
        super().__init__(options.host, options.port, what="Wyoming", task_name="wyoming-pipe")
        self.cluster = cluster
        self.options = options
        self._networks = networks(options.allow)

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        timeout_s = self.options.write_timeout_s
        try:
            refusal = peer_refusal(self._networks, writer.get_extra_info("peername"))
            if refusal is not None:
                await refuse(writer, *refusal, timeout_s=timeout_s)
                return
            placed: list[str] = []
            try:
                opened = await place_on(self.cluster,
                                        functools.partial(self._open_on, placed=placed))
            except Refused as refused:
                await refuse(writer, refused.reason, "busy", timeout_s=timeout_s)
                return
            await pipe_streams((reader, writer), opened, write_timeout_s=timeout_s)
            # Home Assistant connects again for its next request: place it on fresh counts.
            await report_now(self.cluster, placed[-1])
        except (ConnectionError, TimeoutError) as error:
            log.debug("wyoming connection ended: %r", error)
        except Exception:
            log.exception("wyoming pipe failed")
        finally:
            await close_stream(writer)

    async def _open_on(self, node: str, *, placed: list[str]) -> tuple[Stream, bool]:
        """A stream to `node`'s Wyoming server, past its handshake (`placed` gets the
        node's name)."""
        placed.append(node)
        endpoints = self.cluster.endpoints.get(node)
        if endpoints is None or endpoints.wyoming is None:
            raise LookupError(f"node {node} has no Wyoming listener")
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            reader, writer = await asyncio.open_connection(*endpoints.wyoming)
            try:
                writer.write(hello(self.cluster.secret))
                await writer.drain()
                answer = await reader.readexactly(len(WELCOME))
            except asyncio.IncompleteReadError as short:
                answer = short.partial
            except BaseException:
                await close_stream(writer)
                raise
        if answer != WELCOME:  # (its `error` event: too many connections there)
            await close_stream(writer)
            raise NodeBusy(f"node {node} refused the connection")
        return (reader, writer), True
