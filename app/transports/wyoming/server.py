"""The Wyoming TCP server: connections in, events framed and handed to a `Handler`.

Wyoming has no authentication or encryption, by design: serve it on loopback, or on a
trusted LAN with `allow` naming the networks Home Assistant connects from. Every limit
is enforced here: connections (`max_connections`), idle time, a client that does not
read (write timeout), and the framing limits of app.transports.wyoming.protocol. A stream
that cannot be read on is answered with an `error` event saying why, then closed; a
failing request gets an `error` event and the connection goes on. Nothing a client sends
can end the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from app.transports.listener import TcpListener
from app.transports.wyoming.conversations import Conversations
from app.transports.wyoming.info import ProgramNames
from app.transports.wyoming.protocol import Decoder, Event, FramingError, Limits, encode
from app.transports.wyoming.service import Handler, ServiceOptions
from pipeline.engine import Engine
from pipeline.events import Pcm

log = logging.getLogger(__name__)

READ_SIZE = 64 * 1024


@dataclass(frozen=True, kw_only=True)
class WyomingOptions:
    host: str = "127.0.0.1"
    port: int = 10300
    """Wyoming's customary port (Home Assistant's add-ons use 10200-10400)."""
    allow: tuple[str, ...] = ()
    """Client networks allowed to connect, e.g. ("192.168.1.0/24",); empty: any."""
    max_connections: int = 16
    idle_timeout_s: float = 300.0
    """A connection that sends nothing this long is closed."""
    write_timeout_s: float = 30.0
    """A client that does not read what it asked for this long is disconnected."""
    max_conversations: int = 4
    """Conversations (llama contexts) kept open for `handle`; the least recently used
    one is closed to open another."""
    conversation_idle_s: float = 600.0
    limits: Limits = field(default_factory=Limits)
    service: ServiceOptions = field(default_factory=ServiceOptions)

    def __post_init__(self) -> None:
        for network in self.allow:
            try:
                ipaddress.ip_network(network, strict=False)
            except ValueError:
                raise ValueError(f"not a network or address: {network!r} (e.g. 192.168.1.0/24)"
                                 ) from None


Gate = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[str | None]]
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks(allow: tuple[str, ...]) -> list[Network]:
    return [ipaddress.ip_network(n, strict=False) for n in allow]


def peer_refusal(allowed: list[Network], peer: object) -> tuple[str, str] | None:
    """Why a client at `peer` (its socket's peername) may not connect, with the error
    code to send, or None; an empty `allowed` lets anyone in (--wyoming-allow)."""
    if not allowed:
        return None
    host = peer[0] if isinstance(peer, tuple) and peer else ""
    try:
        address = ipaddress.ip_address(str(host).partition("%")[0])
    except ValueError:
        return ("this client's address is not allowed", "forbidden")
    if any(address in network for network in allowed):
        return None
    return (f"{address} is not allowed to use this server (--wyoming-allow)", "forbidden")


async def refuse(writer: asyncio.StreamWriter, text: str, code: str, *, timeout_s: float) -> None:
    """Send an `error` event saying why the connection ends (the caller closes it)."""
    writer.write(encode(Event("error", {"text": text, "code": code})))
    with contextlib.suppress(ConnectionError, TimeoutError):
        async with asyncio.timeout(timeout_s):
            await writer.drain()


class WyomingServer(TcpListener):
    def __init__(self, engine: Engine, names: ProgramNames, options: WyomingOptions | None = None,
                 *, classify: Callable[[Pcm], bool] | None = None, gate: Gate | None = None
                 ) -> None:
        self.options = options or WyomingOptions()
        super().__init__(self.options.host, self.options.port, what="Wyoming",
                         task_name="wyoming-connection")
        self.engine = engine
        self.names = names
        self.classify = classify
        self.gate = gate
        """Asked first on each allowed connection (a cluster node's handshake with the
        ingress, app.cluster.listeners): a refusal's reason, or None to go on."""
        self.conversations = Conversations(engine, max_open=self.options.max_conversations,
                                           idle_s=self.options.conversation_idle_s)
        self.admitted = 0
        """Connections past the refusals and the gate, being answered now."""
        self._networks = networks(self.options.allow)

    async def close(self) -> None:
        """Stop listening, end every connection and conversation. Cancel-safe."""
        await super().close()
        await self.conversations.close_all()

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        try:
            refusal = self._refusal(writer.get_extra_info("peername"))
            if refusal is None and self.gate is not None:
                reason = await self.gate(reader, writer)
                refusal = None if reason is None else (reason, "forbidden")
            if refusal is not None:
                await refuse(writer, *refusal, timeout_s=self.options.write_timeout_s)
                return
            self.admitted += 1
            try:
                await self._converse(reader, writer)
            finally:
                self.admitted -= 1
        except (ConnectionError, TimeoutError) as error:
            log.debug("wyoming connection ended: %r", error)
        except Exception:
            log.exception("wyoming connection failed")
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, TimeoutError):
                async with asyncio.timeout(1.0):
                    await writer.wait_closed()

    def _refusal(self, peer: object) -> tuple[str, str] | None:
        if len(self._connections) > self.options.max_connections:
            return (f"server busy: {self.options.max_connections} connections are open",
                    "busy")
        return peer_refusal(self._networks, peer)

    async def _converse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        lock = asyncio.Lock()

        async def send(event: Event) -> None:
            async with lock:  # (a synthesis streams audio while other events are answered)
                writer.write(encode(event))
                async with asyncio.timeout(self.options.write_timeout_s):
                    await writer.drain()

        handler = Handler(self.engine, self.names, self.conversations, send,
                          self.options.service, self.classify)
        decoder = Decoder(self.options.limits)
        try:
            while True:
                try:
                    async with asyncio.timeout(self.options.idle_timeout_s):
                        chunk = await reader.read(READ_SIZE)
                except TimeoutError:
                    await send(Event("error", {"text": "idle too long: closing", "code": "idle"}))
                    return
                if not chunk:
                    if decoder.mid_event:
                        log.debug("wyoming client left in the middle of an event")
                    return
                try:
                    events = decoder.feed(chunk)
                except FramingError as error:
                    await send(Event("error", {"text": f"{error.reason}: closing the connection",
                                               "code": "bad-frame"}))
                    return
                for event in events:
                    await self._answer(handler, event)
        finally:
            handler.close()

    async def _answer(self, handler: Handler, event: Event) -> None:
        """One event; an unexpected failure is reported to the client, never raised (a
        broken connection is)."""
        try:
            await handler.handle(event)
        except (ConnectionError, TimeoutError):
            raise
        except Exception:
            log.exception("wyoming %s failed", event.type)
            await handler.error(f"the server failed to answer {event.type!r}", "internal-error")
