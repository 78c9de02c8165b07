"""The live dashboard's feed: `GET /ws/dashboard` pushes every recorded turn as it happens
and, once a second, the rolling statistics (`GET /api/stats` answers the same on request).

A dashboard must never slow a conversation. Publishing only appends to each client's
bounded outbox — no await, no I/O — and a sender task per client writes to its socket. A
client whose outbox fills up (it stopped reading, or reads too slowly) is dropped and its
socket closed with a reason; nothing is buffered without limit.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import WSCloseCode, web

from app.appkeys import SESSIONS
from app.observe.metrics import waterfall
from pipeline.conversation_events import Turn, to_wire

if TYPE_CHECKING:
    from app.server import Sessions

log = logging.getLogger(__name__)

OUTBOX_LIMIT = 64
"""Messages waiting per client. About a minute of stats, or a burst of turns: a page that
is merely busy catches up; one that has stopped reading is dropped."""
STATS_INTERVAL_S = 1.0
CLOSE_TIMEOUT_S = 1.0
"""A client that does not read will not answer a close frame either: give up on it fast."""
MAX_CLIENT_MESSAGE = 4096


class Outbox:
    """What waits to be sent to one dashboard client: at most `limit` messages."""

    def __init__(self, limit: int = OUTBOX_LIMIT) -> None:
        self.limit = limit
        self.messages: deque[str] = deque()
        self.dropped: str | None = None
        """Why the client was dropped, once it has been."""
        self.close_code = WSCloseCode.OK
        self.peak = 0
        self.sender: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    def put(self, message: str) -> bool:
        """Queue `message`; on overflow drop the client instead. Never blocks."""
        if self.dropped is not None:
            return False
        if len(self.messages) >= self.limit:
            self.drop(f"too slow: {self.limit} messages were waiting")
            return False
        self.messages.append(message)
        self.peak = max(self.peak, len(self.messages))
        self._ready.set()
        return True

    def drop(self, reason: str, code: WSCloseCode = WSCloseCode.TRY_AGAIN_LATER) -> None:
        """Stop sending to this client and free what waits for it. The sender is cancelled:
        it may be stuck writing to a socket whose peer does not read."""
        if self.dropped is None:
            self.dropped, self.close_code = reason, code
            self.messages.clear()
        if self.sender is not None:
            self.sender.cancel()

    async def get(self) -> str:
        """The next message (waits for one). Cancel-safe: nothing is taken until it returns."""
        while not self.messages:
            self._ready.clear()
            await self._ready.wait()
        return self.messages.popleft()


class Hub:
    """The connected dashboard clients."""

    def __init__(self, limit: int = OUTBOX_LIMIT) -> None:
        self.limit = limit
        self.clients: set[Outbox] = set()
        self.dropped = 0

    def join(self) -> Outbox:
        outbox = Outbox(self.limit)
        self.clients.add(outbox)
        return outbox

    def leave(self, outbox: Outbox) -> None:
        self.clients.discard(outbox)

    def publish(self, data: Mapping[str, Any]) -> None:
        """Send a message (a `turn_record`, stats, a wire event) to every client.
        Synchronous and non-blocking: safe to call from a conversation's callbacks.
        Serialized once, whatever the number of clients."""
        if not self.clients:
            return
        message = json.dumps(data)
        for outbox in list(self.clients):
            if not outbox.put(message):
                self.clients.discard(outbox)
                self.dropped += 1
                log.warning("dashboard client dropped: %s", outbox.dropped)

    def close_all(self, reason: str) -> None:
        for outbox in list(self.clients):
            outbox.drop(reason, WSCloseCode.GOING_AWAY)
        self.clients.clear()


def turn_record(session: int | str, turn: Turn) -> dict[str, Any]:
    """A turn as the dashboard feed and /api/turns carry it: the turn's wire form, its
    session and its index again as `turn` (the dashboard's key), and its waterfall."""
    record = to_wire(turn)
    return {**record, "session": session, "turn": turn.index,
            "waterfall": waterfall(record["timeline_ms"])}


def stats_message(stats: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "stats", **stats}


async def feed(request: web.Request) -> web.WebSocketResponse:
    """GET /ws/dashboard: {"type": "turn", ...} per recorded turn (again when the browser's
    TTFA arrives later) and {"type": "stats", ...} every second. Messages sent to it are
    ignored."""
    sessions: Sessions = request.app[SESSIONS]
    return await serve_feed(request, sessions.hub, sessions.stats)


async def serve_feed(request: web.Request, hub: Hub,
                     stats: Callable[[], dict[str, Any]]) -> web.WebSocketResponse:
    """A dashboard client on `hub`, first sent `stats()` as it is once the client has
    joined (a cluster's ingress serves its merged feed through this too)."""
    ws = web.WebSocketResponse(heartbeat=15.0, timeout=CLOSE_TIMEOUT_S,
                               max_msg_size=MAX_CLIENT_MESSAGE)
    await ws.prepare(request)
    outbox = hub.join()
    outbox.put(json.dumps(stats_message(stats())))
    outbox.sender = asyncio.create_task(_send(ws, outbox), name="dashboard-send")
    reader = asyncio.create_task(_read(ws), name="dashboard-read")
    tasks = {outbox.sender, reader}
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        hub.leave(outbox)
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        await _close(ws, outbox)
    return ws


async def _send(ws: web.WebSocketResponse, outbox: Outbox) -> None:
    try:
        while True:
            await ws.send_str(await outbox.get())
    except ConnectionError:  # the peer went away; the handler closes up
        return


async def _read(ws: web.WebSocketResponse) -> None:
    """Drain what the client sends: this is what notices its close frame or its loss."""
    async for _message in ws:
        pass


async def _close(ws: web.WebSocketResponse, outbox: Outbox) -> None:
    if ws.closed:
        return
    reason = (outbox.dropped or "").encode()[:123]  # the protocol's limit for a reason
    try:
        async with asyncio.timeout(CLOSE_TIMEOUT_S):
            await ws.close(code=outbox.close_code, message=reason)
    except TimeoutError:
        pass  # aiohttp has closed the transport: a peer that never reads gets no goodbye


async def api_stats(request: web.Request) -> web.Response:
    sessions: Sessions = request.app[SESSIONS]
    return web.json_response(sessions.stats())


async def publish_stats(sessions: Sessions, interval_s: float = STATS_INTERVAL_S) -> None:
    """Push the rolling statistics to the dashboards every `interval_s` until cancelled."""
    while True:
        await asyncio.sleep(interval_s)
        if sessions.hub.clients:
            sessions.hub.publish(stats_message(sessions.stats()))
