"""GET /v1/realtime on the main server: the WebSocket upgrade and the session's lifetime.

Access is the server's own (app.security.access): the middleware checks Host, Origin
and the credential before the upgrade — an `openai` client passes the pairing token as
its API key (`Authorization: Bearer TOKEN`); on loopback no key is needed. A full or
draining server refuses with 503 like /offer, and every Realtime session counts against
`--max-sessions` and the measured load with the WebRTC ones. When the server drains
(SIGTERM) or shuts down each client gets an `error` event saying so, then a close frame
1001 (going away).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any, cast

from aiohttp import WSCloseCode, WSMsgType, web

from app.appkeys import SESSIONS
from app.security.limits import Refused
from app.transports.realtime.options import RealtimeOptions
from app.transports.realtime.protocol import ClientError, error_event
from app.transports.realtime.session import RealtimeSession
from pipeline.events import Pcm

log = logging.getLogger(__name__)

PATH = "/v1/realtime"
CLOSE_WAIT_S = 3.0


@dataclass
class LiveRealtime:
    """The Realtime sessions in progress, and the options new ones get."""

    options: RealtimeOptions = field(default_factory=RealtimeOptions)
    sessions: dict[str, tuple[RealtimeSession, web.WebSocketResponse]] = field(
        default_factory=dict)
    shutting_down: bool = False
    classify: Callable[[Pcm], bool] | None = None
    """Replaces webrtcvad in new sessions (tests speak with synthetic frames)."""

    def __len__(self) -> int:
        return len(self.sessions)

    def open_count(self) -> int:
        """Sessions whose client is still connected (one whose websocket is closing is
        finishing its last turn: it does not count against the cap or the load)."""
        return sum(1 for session, ws in self.sessions.values()
                   if not ws.closed and not session.stop.is_set())

    async def close_all(self, _app: web.Application | None = None) -> None:
        """Tell every client the server is going away, and end each session (its queued
        events go out, then a close frame 1001); waits up to CLOSE_WAIT_S (on_shutdown)."""
        self.shutting_down = True
        for session, _ws in list(self.sessions.values()):
            session.post(error_event(ClientError("the server is shutting down",
                                                 "server_shutting_down", kind="server_error")))
            session.stop.set()
        deadline = asyncio.get_running_loop().time() + CLOSE_WAIT_S
        while self.sessions and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)


REALTIME = web.AppKey("realtime", LiveRealtime)


def add_realtime(app: web.Application, options: RealtimeOptions | None = None) -> None:
    """Serve /v1/realtime on `app` (made by app.server.make_app: it needs its Sessions)."""
    live = LiveRealtime(options or RealtimeOptions())
    app[REALTIME] = live
    sessions = app[SESSIONS]
    sessions.others.append(live.open_count)
    sessions.closers.append(live.close_all)
    app.router.add_get(PATH, realtime)
    app.on_shutdown.append(live.close_all)


async def realtime(request: web.Request) -> web.StreamResponse:
    sessions = request.app[SESSIONS]
    live = request.app[REALTIME]
    sessions.admit()  # full (WebRTC and Realtime together), draining, or too loaded
    ws = web.WebSocketResponse(max_msg_size=live.options.max_message_bytes, heartbeat=20.0,
                               protocols=("realtime",))
    if not ws.can_prepare(request).ok:
        raise Refused(426, "this endpoint is a WebSocket: connect with Upgrade: websocket "
                           "(an OpenAI Realtime client)", {"Upgrade": "websocket"})
    await ws.prepare(request)
    options = replace(live.options, apace_events=request.query.get("apace_events") == "1")

    async def send(event: dict[str, Any]) -> None:
        await ws.send_str(json.dumps(event))

    record = _Record()
    session = RealtimeSession(sessions.engine, send, options, classify=live.classify,
                              on_turn=lambda turn: sessions.record_turn(cast(Any, record), turn))
    record.id = session.id
    live.sessions[session.id] = (session, ws)
    log.info("realtime session %s opened", session.id)
    try:
        await session.run(_messages(ws))
    finally:
        live.sessions.pop(session.id, None)
        if session.overflowed:
            await ws.close(code=WSCloseCode.POLICY_VIOLATION, message=b"client too slow")
        elif live.shutting_down:
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutting down")
        else:
            await ws.close()
        log.info("realtime session %s closed", session.id)
    return ws


@dataclass
class _Record:
    """What the dashboard's turn records need of a session: its id."""

    id: str = ""


async def _messages(ws: web.WebSocketResponse) -> AsyncIterator[str | bytes]:
    async for message in ws:
        if message.type in (WSMsgType.TEXT, WSMsgType.BINARY):
            yield message.data
        elif message.type == WSMsgType.ERROR:  # (too large a message: aiohttp closes, 1009)
            log.info("realtime websocket error: %s", ws.exception())
            return
