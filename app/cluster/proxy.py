"""The ingress's pipes to a node: a websocket (Realtime) and a byte stream (Wyoming).

Each pipe copies both ways in two tasks it owns, and ends when either side does: a
websocket's close code (and reason) is passed on to the other side, a stream's end is
passed on as the end of the other. Nothing is left behind: ending, failing or being
cancelled, a pipe cancels and awaits both its tasks and closes what it opened.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import ClientWebSocketResponse, WSCloseCode, WSMsgType, web

log = logging.getLogger(__name__)

READ_SIZE = 64 * 1024
MAX_REASON_BYTES = 123
"""A close frame's reason is at most 123 bytes (RFC 6455, 5.5)."""

WebSocket = web.WebSocketResponse | ClientWebSocketResponse


def passed_on(code: int | None) -> int:
    """The close code to send the other side for one that `code` ended: the same when a
    peer may send it; a connection lost without a close frame is an internal error
    (1011); no code at all (1005) is a normal close."""
    if code is None or code == WSCloseCode.ABNORMAL_CLOSURE:
        return WSCloseCode.INTERNAL_ERROR
    if 1000 <= code <= 1003 or 1007 <= code <= 1014 or 3000 <= code <= 4999:
        return code
    return WSCloseCode.OK


@dataclass(frozen=True)
class Ended:
    """Which side of a pipe ended it, with what code and reason."""

    side: WebSocket
    code: int | None
    reason: str = ""


async def _copy(source: WebSocket, sink: WebSocket) -> Ended:
    """Frames from `source` to `sink` until one of them ends."""
    while True:
        message = await source.receive()
        try:
            if message.type is WSMsgType.TEXT:
                await sink.send_str(message.data)
                continue
            if message.type is WSMsgType.BINARY:
                await sink.send_bytes(message.data)
                continue
        except ConnectionError:  # the sink went away while we wrote to it
            return Ended(sink, sink.close_code)
        if message.type is WSMsgType.CLOSE:
            return Ended(source, message.data, message.extra or "")
        if message.type is WSMsgType.ERROR:  # (too big a frame: aiohttp closed it, 1009)
            log.info("websocket error: %s", source.exception())
        return Ended(source, source.close_code)  # CLOSING, CLOSED, ERROR


class WebSocketPipe:
    """A client's websocket and the node's, joined: `await pipe.run()`."""

    def __init__(self, client: web.WebSocketResponse, node: ClientWebSocketResponse,
                 before_client_closes: Callable[[], Awaitable[None]] | None = None) -> None:
        self.client = client
        self.node = node
        self.before_client_closes = before_client_closes
        """Awaited after the node's side closed and before the client's does (the node
        reports its freed slot: a client that calls again at once is placed on fresh
        counts). The client's websocket must not answer a close by itself (autoclose off)."""
        self._ending: tuple[int, bytes] | None = None
        self._pumps: list[asyncio.Task[Ended]] = []

    async def run(self) -> None:
        """Copy frames both ways until either side closes, then close the other with its
        code and reason. Cancel-safe: both sides are closed (1001) and both tasks ended."""
        self._pumps = [asyncio.create_task(_copy(self.client, self.node), name="pipe-up"),
                       asyncio.create_task(_copy(self.node, self.client), name="pipe-down")]
        try:
            if self._ending is None:  # (not ended before it began)
                await asyncio.wait(self._pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended = self._ended()
            for pump in self._pumps:
                pump.cancel()
            await asyncio.wait(self._pumps)
            await self._close(None if self._ending else ended)

    def _ended(self) -> Ended | None:
        """How the first pump to end ended, if one has (looked at even when `run` was
        cancelled: aiohttp may cancel a handler as soon as its client's connection closes,
        however cleanly it closed). A pump that failed is logged."""
        ended = None
        for pump in self._pumps:
            if not pump.done() or pump.cancelled():
                continue
            if (error := pump.exception()) is not None:
                log.warning("websocket pipe failed: %r", error)
            elif ended is None:
                ended = pump.result()
        return ended

    def end(self, code: int = WSCloseCode.GOING_AWAY, reason: str = "") -> None:
        """End the pipe from outside (the ingress shutting down): both sides get `code`."""
        self._ending = (code, reason.encode()[:MAX_REASON_BYTES])
        for pump in self._pumps:
            pump.cancel()

    async def _close(self, ended: Ended | None) -> None:
        if ended is None:
            code, reason = self._ending or (WSCloseCode.GOING_AWAY, b"")
            await asyncio.gather(self.client.close(code=code, message=reason),
                                 self.node.close(code=code, message=reason),
                                 return_exceptions=True)
            return
        code, reason = passed_on(ended.code), ended.reason.encode()[:MAX_REASON_BYTES]
        # The node's side first, then the hook, then the client's (either may be gone).
        for side in (self.node, self.client):
            if side is self.client and self.before_client_closes is not None:
                try:
                    await self.before_client_closes()
                except Exception:
                    log.warning("before the client's close", exc_info=True)
            with contextlib.suppress(Exception):
                if side is ended.side:
                    await side.close()  # it closed: answer its close frame
                else:
                    await side.close(code=code, message=reason)


async def _copy_bytes(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      write_timeout_s: float) -> bool:
    """Bytes from `reader` to `writer` until the reader's end, which is passed on (True),
    or until either side fails (False)."""
    try:
        while chunk := await reader.read(READ_SIZE):
            writer.write(chunk)
            async with asyncio.timeout(write_timeout_s):
                await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
        return True
    except (ConnectionError, TimeoutError):
        return False


async def pipe_streams(client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                       node: tuple[asyncio.StreamReader, asyncio.StreamWriter], *,
                       write_timeout_s: float = 30.0) -> None:
    """Bytes both ways between a client and a node until the node's side ends. The
    client's end of input is passed on, and the node's answers to what it was asked still
    come back (a Wyoming server answers, then closes). Closes the node's stream (the
    client's is the caller's). Cancel-safe."""
    up = asyncio.create_task(_copy_bytes(client[0], node[1], write_timeout_s), name="pipe-up")
    down = asyncio.create_task(_copy_bytes(node[0], client[1], write_timeout_s),
                               name="pipe-down")
    try:
        done, _ = await asyncio.wait([up, down], return_when=asyncio.FIRST_COMPLETED)
        if up in done and up.result():  # the client said all it had: hear the answers
            await asyncio.wait([down])
    finally:
        for task in (up, down):
            task.cancel()
        await asyncio.wait([up, down])
        await close_stream(node[1])


async def close_stream(writer: asyncio.StreamWriter, timeout_s: float = 1.0) -> None:
    """Close a stream and wait (briefly) until it is closed. Cancel-safe."""
    writer.close()
    with contextlib.suppress(ConnectionError, TimeoutError):
        async with asyncio.timeout(timeout_s):
            await writer.wait_closed()
