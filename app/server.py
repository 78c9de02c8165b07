"""`apace serve`: one aiohttp server for the page, WebRTC signaling and the dashboard.

POST /offer takes the browser's SDP offer and answers it; each peer connection runs one
conversation (app.session). Every bad request gets a 4xx with a reason in JSON.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from aiortc import RTCConfiguration, RTCIceServer, RTCPeerConnection, RTCSessionDescription

from app import dashboard as dash
from app.appkeys import SESSIONS
from app.metrics import LoopLag, latency_summary, waterfall
from app.prometheus import CONTENT_TYPE, Metrics
from app.session import Session
from pipeline.conversation import Turn
from pipeline.engine import Engine
from pipeline.timeline import TTFA_BROWSER

log = logging.getLogger(__name__)

WEB_DIR = Path(__file__).resolve().parent.parent / "web"
MAX_OFFER_BYTES = 64 * 1024
"""A real audio offer is 2-6 KB; anything far larger is refused before parsing."""


@dataclass(frozen=True, kw_only=True)
class ServerOptions:
    max_sessions: int = 4
    idle_timeout_s: float = 30.0
    """A session whose microphone delivers nothing for this long is closed."""
    stun: tuple[str, ...] = ()
    """STUN URLs; none by default (aiortc would otherwise reach for a public one)."""
    recent_turns: int = 200
    """Turns kept for /api/turns and the dashboard; the rolling percentiles cover these."""
    jitter_hold: int = 1
    """Later mic packets that wait for a missing one before it is given up as lost
    (app.webrtc.PacketJitterBuffer); in-order packets are never held. aiortc's own buffer
    holds every packet until the next arrives (20 ms each; mic-to-VAD measured 62 / 82 /
    122 ms on loopback with its prefetch 1 / 2 / 4)."""
    slo_ttfa_ms: float = 800.0
    """The TTFA objective the dashboard reports attainment against (browser TTFA where the
    page measured it, else the server's)."""


@dataclass
class Sessions:
    """The live sessions, the recent turns they produced, and what watches them: the
    dashboard feed, the Prometheus metrics and the event-loop lag probe."""

    engine: Engine
    options: ServerOptions
    live: dict[int, Session] = field(default_factory=dict)
    turns: deque[dict[str, Any]] = field(default_factory=deque)
    hub: dash.Hub = field(default_factory=dash.Hub)
    lag: LoopLag = field(default_factory=LoopLag)
    metrics: Metrics = field(init=False)

    def __post_init__(self) -> None:
        self.metrics = Metrics(self.engine.stats.snapshot, lambda: len(self.live),
                               lambda: self.lag.summary()["max"])

    def record_turn(self, session: Session, turn: Turn) -> None:
        """A finished turn: keep it, observe its latencies, push it to the dashboards."""
        timeline_ms = turn.timeline.relative_ms()
        record = {"session": session.id, "turn": turn.index,
                  "transcript": turn.transcript, "reply": turn.reply, "heard": turn.heard,
                  "interrupted": turn.interrupted, "timeline_ms": timeline_ms,
                  "skill": turn.skill, "quality": turn.quality,
                  "waterfall": waterfall(timeline_ms)}
        self.turns.append(record)
        while len(self.turns) > self.options.recent_turns:
            self.turns.popleft()
        self.metrics.observe_turn(timeline_ms)
        self.hub.publish("turn", record)
        if self.hub.clients:  # the percentiles moved: show them now, not at the next tick
            self.hub.publish("stats", self.stats())

    def record_heard(self, session: Session, turn: Turn) -> None:
        """The page's TTFA arrived after the turn was recorded: update the record."""
        record = next((r for r in reversed(self.turns)
                       if r["session"] == session.id and r["turn"] == turn.index), None)
        if record is None or TTFA_BROWSER in record["timeline_ms"]:
            return
        record["timeline_ms"] = turn.timeline.relative_ms()
        record["waterfall"] = waterfall(record["timeline_ms"])
        if (ms := record["timeline_ms"].get(TTFA_BROWSER)) is not None:
            self.metrics.observe_heard(ms)
        self.hub.publish("turn", record)

    def stats(self) -> dict[str, Any]:
        """What the dashboard shows besides the turns themselves."""
        return {**latency_summary(self.turns, self.options.slo_ttfa_ms),
                "engine": self.engine.stats.snapshot(), "loop_lag_ms": self.lag.summary(),
                "sessions": len(self.live), "dashboards": len(self.hub.clients),
                "dashboards_dropped": self.hub.dropped, "window": len(self.turns)}

    def forget(self, session: Session) -> None:
        self.live.pop(session.id, None)

    async def close_all(self) -> None:
        await asyncio.gather(*(s.close() for s in list(self.live.values())))


def _error(status: type[web.HTTPException], reason: str) -> web.HTTPException:
    return status(text=json.dumps({"error": reason}), content_type="application/json")


def _too_large(size: int) -> web.HTTPException:
    return web.HTTPRequestEntityTooLarge(
        max_size=MAX_OFFER_BYTES, actual_size=size, content_type="application/json",
        text=json.dumps({"error": f"offer too large ({size} bytes; limit {MAX_OFFER_BYTES})"}),
    )


async def _read_offer(request: web.Request) -> RTCSessionDescription:
    if request.content_type != "application/json":
        raise _error(web.HTTPUnsupportedMediaType,
                     f"send the offer as application/json, not {request.content_type!r}")
    if request.content_length is not None and request.content_length > MAX_OFFER_BYTES:
        raise _too_large(request.content_length)
    body = await request.content.read(MAX_OFFER_BYTES + 1)  # chunked bodies have no length
    if len(body) > MAX_OFFER_BYTES:
        raise _too_large(len(body))
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise _error(web.HTTPBadRequest, "the body is not valid JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("sdp"), str):
        raise _error(web.HTTPBadRequest, "expected JSON {\"sdp\": string, \"type\": \"offer\"}")
    if data.get("type") != "offer":
        raise _error(web.HTTPBadRequest, f"'type' must be \"offer\", got {data.get('type')!r}")
    if "m=audio" not in data["sdp"]:
        raise _error(web.HTTPBadRequest, "the offer has no audio (m=audio) section")
    return RTCSessionDescription(sdp=data["sdp"], type="offer")


async def offer(request: web.Request) -> web.Response:
    sessions: Sessions = request.app[SESSIONS]
    description = await _read_offer(request)
    if len(sessions.live) >= sessions.options.max_sessions:
        raise _error(web.HTTPServiceUnavailable,
                     f"server full: {sessions.options.max_sessions} sessions are active; "
                     "try again later")
    servers = [RTCIceServer(urls=url) for url in sessions.options.stun]
    pc = RTCPeerConnection(RTCConfiguration(iceServers=servers))
    session = Session(pc, sessions.engine, idle_timeout=sessions.options.idle_timeout_s,
                      jitter_hold=sessions.options.jitter_hold,
                      on_turn=sessions.record_turn, on_heard=sessions.record_heard,
                      on_closed=sessions.forget)
    sessions.live[session.id] = session
    try:
        await pc.setRemoteDescription(description)
        if session.task is None:
            raise ValueError("no audio track could be received from the offer")
        await pc.setLocalDescription(await pc.createAnswer())
    except Exception as error:  # aiortc raises many types for a malformed SDP
        await session.close()
        raise _error(web.HTTPBadRequest, f"cannot use this SDP offer: {error}") from None
    local = pc.localDescription
    return web.json_response({"sdp": local.sdp, "type": local.type, "session": session.id})


async def index(_request: web.Request) -> web.FileResponse:
    return web.FileResponse(WEB_DIR / "index.html")


async def dashboard(_request: web.Request) -> web.FileResponse:
    return web.FileResponse(WEB_DIR / "dashboard.html")


async def api_turns(request: web.Request) -> web.Response:
    sessions: Sessions = request.app[SESSIONS]
    return web.json_response({"turns": list(sessions.turns)})


async def metrics(request: web.Request) -> web.Response:
    sessions: Sessions = request.app[SESSIONS]
    return web.Response(body=sessions.metrics.render(), headers={"Content-Type": CONTENT_TYPE})


async def health(request: web.Request) -> web.Response:
    """Liveness plus what a leak would show: sessions, asyncio tasks, threads."""
    import threading

    sessions: Sessions = request.app[SESSIONS]
    return web.json_response({
        "ok": True,
        "sessions": len(sessions.live),
        "tasks": len(asyncio.all_tasks()),
        "threads": threading.active_count(),
        **({"task_names": sorted(_describe(t) for t in asyncio.all_tasks()),
            "thread_names": sorted(t.name for t in threading.enumerate())}
           if "detail" in request.query else {}),
    })


def _describe(task: asyncio.Task[Any]) -> str:
    coro = task.get_coro()
    return getattr(coro, "__qualname__", None) or task.get_name()


def make_app(engine: Engine, options: ServerOptions | None = None) -> web.Application:
    app = web.Application(client_max_size=MAX_OFFER_BYTES)
    sessions = Sessions(engine, options or ServerOptions())
    app[SESSIONS] = sessions
    app.router.add_get("/", index)
    app.router.add_get("/dashboard", dashboard)
    app.router.add_static("/static", WEB_DIR)
    app.router.add_post("/offer", offer)
    app.router.add_get("/api/turns", api_turns)
    app.router.add_get("/api/stats", dash.api_stats)
    app.router.add_get("/ws/dashboard", dash.feed)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", health)

    async def on_shutdown(_app: web.Application) -> None:
        sessions.hub.close_all("server shutting down")
        await sessions.close_all()

    app.on_shutdown.append(on_shutdown)
    app.cleanup_ctx.append(_background)
    return app


async def _background(app: web.Application) -> AsyncIterator[None]:
    """The app's own tasks: the loop-lag probe and the dashboards' stats ticker. They live
    from start-up to cleanup and are cancelled (and awaited) there."""
    sessions: Sessions = app[SESSIONS]
    tasks = [asyncio.create_task(sessions.lag.run(), name="loop-lag"),
             asyncio.create_task(dash.publish_stats(sessions), name="dashboard-stats")]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
