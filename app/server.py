"""`apace serve`: one aiohttp server for the page, WebRTC signaling and the dashboard.

POST /offer takes the browser's SDP offer and answers it; each peer connection runs one
conversation (app.transports.webrtc.session). Every bad request gets a 4xx with a reason in JSON; a full or
draining server answers 503 with Retry-After. Every request first passes the access rules
(app.security.access: Host, Origin, credential).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiortc import RTCConfiguration, RTCIceServer, RTCPeerConnection, RTCSessionDescription

from app.appkeys import SESSIONS
from app.observe import dashboard as dash
from app.observe.metrics import LoopLag, latency_summary
from app.observe.prometheus import CONTENT_TYPE, Metrics
from app.security import access as acl
from app.security.limits import Refused, parse_json, read_body, refusals
from app.security.pairing import ACCESS, pair, pair_page
from app.security.sdp import check_offer
from app.transports.realtime.route import add_realtime
from app.transports.webrtc.session import Session
from app.web_dir import WEB_DIR
from pipeline.answer.llm import Sequenced
from pipeline.compute.admission import LoadModel
from pipeline.conversation_events import GoingAway, Turn, to_wire
from pipeline.engine import Engine
from pipeline.room import Stream
from pipeline.timeline import TTFA_BROWSER, TTFA_SERVER

log = logging.getLogger(__name__)

MAX_OFFER_BYTES = 64 * 1024
"""A real audio offer is 2-6 KB; anything far larger is refused before parsing."""


@dataclass(frozen=True, kw_only=True)
class ServerOptions:
    """How the server bounds its sessions (docs/configuration.md, docs/scaling.md)."""

    max_sessions: int = 4
    idle_timeout_s: float = 30.0
    """A session whose microphone delivers nothing for this long is closed."""
    stun: tuple[str, ...] = ()
    """STUN URLs; none by default (aiortc would otherwise reach for a public one)."""
    recent_turns: int = 200
    """Turns kept for /api/turns and the dashboard; the rolling percentiles cover these."""
    jitter_hold: int = 1
    """Later mic packets that wait for a missing one before it is given up as lost
    (default 1; app.transports.webrtc.tracks.PacketJitterBuffer); in-order packets are
    never held (docs/latency.md)."""
    slo_ttfa_ms: float = 800.0
    """The TTFA objective, in ms, that admission keeps and the dashboard reports attainment
    against (browser TTFA where the page reports it, else the server's; default 800)."""
    connect_timeout_s: float = 15.0
    """An offer whose peer has not connected (ICE and DTLS) this long after it is answered
    is closed, and its slot and llama context freed."""
    max_session_s: float = 3600.0
    """A session is ended at this age, whatever it is doing (the page is told why)."""
    retry_after_s: int = 5
    """What a refused offer is told to wait (Retry-After) when the server is full or
    draining."""
    admit_by_load: bool = True
    """Refuse a new session when the current load predicts it would push TTFA p95 over
    `slo_ttfa_ms` (default True; pipeline.compute.admission); `max_sessions` stays the cap."""
    drain_timeout_s: float = 10.0
    """On SIGTERM, how long replies in flight may take to finish before every session is
    closed."""


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

    draining: bool = False
    load: LoadModel = field(init=False)
    others: list[Callable[[], int]] = field(default_factory=list)
    """How many sessions each other way in on this server has open (Realtime): they count
    against --max-sessions and the load with the WebRTC ones."""
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    """What ends the other ways' sessions when the server drains."""

    def __post_init__(self) -> None:
        self.load = LoadModel(self.options.slo_ttfa_ms)
        self.metrics = Metrics(self.engine.stats.snapshot, lambda: len(self.live),
                               lambda: self.lag.summary()["max"], lambda: self.draining,
                               memory=self.memory)

    def record_turn(self, session: Session, turn: Turn) -> None:
        """A finished turn: keep it, observe its latencies, push it to the dashboards."""
        record = dash.turn_record(session.id, turn)
        timeline_ms = record["timeline_ms"]
        self.turns.append(record)
        while len(self.turns) > self.options.recent_turns:
            self.turns.popleft()
        self.metrics.observe_turn(timeline_ms)
        if (ms := timeline_ms.get(TTFA_SERVER)) is not None:
            self.load.turn(time.monotonic(), ms)
        self.sample_load()
        self.hub.publish(record)
        if self.hub.clients:  # the percentiles moved: show them now, not at the next tick
            self.hub.publish(dash.stats_message(self.stats()))

    def record_heard(self, session: Session, turn: Turn) -> None:
        """The page's TTFA arrived after the turn was recorded: update the record."""
        record = next((r for r in reversed(self.turns)
                       if r["session"] == session.id and r["turn"] == turn.index), None)
        if record is None or TTFA_BROWSER in record["timeline_ms"]:
            return
        record.update(dash.turn_record(session.id, turn))
        if (ms := record["timeline_ms"].get(TTFA_BROWSER)) is not None:
            self.metrics.observe_heard(ms)
        self.hub.publish(record)

    def stats(self) -> dict[str, Any]:
        """What the dashboard shows besides the turns themselves."""
        return {**latency_summary(self.turns, self.options.slo_ttfa_ms),
                "engine": self.engine.stats.snapshot(), "loop_lag_ms": self.lag.summary(),
                "sessions": len(self.live), "dashboards": len(self.hub.clients),
                "dashboards_dropped": self.hub.dropped, "window": len(self.turns),
                "memory": self.memory()}

    def memory(self) -> dict[str, Any]:
        """The process's resident memory and, with a shared LLM, its KV per session."""
        out: dict[str, Any] = {"rss_bytes": _process_usage().get("rss_bytes")}
        llm_memory = self.engine.llm_memory
        if llm_memory is None:
            return out
        llm: dict[str, Any] = dict(llm_memory())
        held: dict[str, int] = llm.pop("kv_bytes_held", {})
        out["llm"] = llm
        out["kv_bytes_per_session"] = {str(sid): held.get(str(_llm_key(session)), 0)
                                       for sid, session in self.live.items()}
        return out

    def forget(self, session: Session) -> None:
        if self.live.pop(session.id, None) is not None:
            self.metrics.ended.labels(reason=session.end_reason).inc()

    def admit(self) -> None:
        """Refuse a new session (503 with Retry-After) while full or draining."""
        retry = {"Retry-After": str(self.options.retry_after_s)}
        if self.draining:
            raise Refused(503, "the server is shutting down; try again shortly", retry,
                          kind="draining")
        open_now = self.open_sessions()
        if open_now >= self.options.max_sessions:
            raise Refused(503, f"server full: {self.options.max_sessions} sessions are active;"
                               " try again later", retry, kind="full")
        self.sample_load()
        if self.options.admit_by_load:
            verdict = self.load.verdict(open_now)
            if not verdict.admit:
                raise Refused(503, f"server busy: {verdict.reason}; try again later", retry,
                              kind="load")

    def open_sessions(self) -> int:
        """Sessions open on every way in (WebRTC and the others); one already closing
        does not count (a client that hangs up and calls again at once is not refused
        for its own last call)."""
        return (sum(1 for s in self.live.values() if not s.closing)
                + sum(count() for count in self.others))

    def sample_load(self) -> None:
        """Record the CPU's busy time now (the load verdict reads it; a node's report)."""
        cpu = self.engine.cpu
        if cpu is not None:
            self.load.busy_total(time.monotonic(), cpu.held_s)

    def count_refusal(self, refused: Refused) -> None:
        self.metrics.refused.labels(reason=refused.kind).inc()

    async def drain(self) -> None:
        """Shut down gently: refuse new sessions, tell every page and dashboard, let each
        reply in flight finish (at most `drain_timeout_s`), closing each session as soon
        as it has nothing left to say, then close the rest. Cancel-safe: cancelling skips
        the wait; `close_all` still ends every session."""
        self.draining = True
        message = "the server is shutting down"
        for session in list(self.live.values()):
            session.going_away(message, retry_after_s=self.options.retry_after_s)
        self.hub.publish(to_wire(GoingAway(message, self.options.retry_after_s)))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.options.drain_timeout_s
        while self.live and loop.time() < deadline:
            idle = [s for s in self.live.values() if not s.busy]
            await asyncio.gather(*(s.close("server shutdown") for s in idle))
            await asyncio.sleep(0.05)
        await asyncio.gather(*(close() for close in self.closers))
        await self.close_all()

    async def close_all(self) -> None:
        await asyncio.gather(*(s.close("server shutdown") for s in list(self.live.values())))


async def _read_offer(request: web.Request) -> tuple[RTCSessionDescription, Stream]:
    """The offer in the body, or `Refused` with the reason: the whole body however it
    arrives (bounded), JSON within depth and size limits, an SDP apace will use."""
    if request.content_type != "application/json":
        raise Refused(415, f"send the offer as application/json, not "
                           f"{request.content_type[:64]!r}")
    return parse_offer(parse_json(await read_body(request, limit=MAX_OFFER_BYTES),
                                  max_bytes=MAX_OFFER_BYTES))


def parse_offer(data: object) -> tuple[RTCSessionDescription, Stream]:
    """An offer already read as JSON (here, or forwarded by a cluster's ingress)."""
    if not isinstance(data, dict) or not isinstance(data.get("sdp"), str):
        raise Refused(400, "expected JSON {\"sdp\": string, \"type\": \"offer\"}")
    if data.get("type") != "offer":
        raise Refused(400, f"'type' must be \"offer\", got {str(data.get('type'))[:32]!r}")
    stream = _stream(data.get("processing"))
    check_offer(data["sdp"])
    return RTCSessionDescription(sdp=data["sdp"], type="offer"), stream


PROCESSING = ("noiseSuppression", "echoCancellation", "autoGainControl")


def _stream(processing: object) -> Stream:
    """The offer's `processing`: what the browser says it did to the microphone (its
    track settings: noise suppressed, its own echo cancelled); absent: raw audio,
    conditioned here."""
    if processing is None:
        return Stream()
    if not isinstance(processing, dict) or any(
            key not in PROCESSING or not isinstance(value, bool)
            for key, value in processing.items()):
        raise Refused(400, "'processing' must be an object of booleans named "
                      + ", ".join(PROCESSING))
    return Stream(processed=processing.get("noiseSuppression", False),
                  echo_cancelled=processing.get("echoCancellation", False))


async def offer(request: web.Request) -> web.Response:
    sessions: Sessions = request.app[SESSIONS]
    sessions.admit()  # before reading: a full server spends nothing on the body
    description, stream = await _read_offer(request)
    answer = await answer_offer(sessions, description, stream)
    if request.transport is None or request.transport.is_closing():
        # The client left while the answer was made: no one can connect to this session,
        # so its slot is freed now rather than at the connect deadline.
        session = sessions.live.get(answer["session"])
        if session is not None:
            await session.close("client gone")
        return web.json_response({"error": "the client left before the answer"}, status=400)
    return web.json_response(answer)


async def answer_offer(sessions: Sessions, description: RTCSessionDescription,
                       stream: Stream) -> dict[str, Any]:
    """Open a session for the offer and return the answer ({sdp, type, session}), or
    raise `Refused`."""
    sessions.admit()  # (again: others may have been admitted while the body arrived)
    options = sessions.options
    servers = [RTCIceServer(urls=url) for url in options.stun]
    pc = RTCPeerConnection(RTCConfiguration(iceServers=servers))
    session = Session(pc, sessions.engine, idle_timeout=options.idle_timeout_s,
                      jitter_hold=options.jitter_hold, connect_timeout=options.connect_timeout_s,
                      max_age=options.max_session_s, stream=stream,
                      on_turn=sessions.record_turn, on_heard=sessions.record_heard,
                      on_closed=sessions.forget)
    sessions.live[session.id] = session
    session.begin()  # from now on the slot is bounded in time, whatever happens here
    try:
        await pc.setRemoteDescription(description)
        if session.task is None:
            raise ValueError("no audio track could be received from the offer")
        await pc.setLocalDescription(await pc.createAnswer())
    except Exception as error:  # aiortc raises many types for a malformed SDP
        await session.close("offer refused")
        raise Refused(400, f"cannot use this SDP offer: {str(error)[:200]}") from None
    except BaseException:  # cancelled (the server stopping): nothing of it may stay
        await session.close("offer cancelled")
        raise
    local = pc.localDescription
    return {"sdp": local.sdp, "type": local.type, "session": session.id}


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
    """Liveness plus what a leak would show: sessions, asyncio tasks, threads, fds, RSS.
    The names behind `?detail` need the credential (app.security.access)."""
    sessions: Sessions = request.app[SESSIONS]
    return web.json_response({
        "ok": True,
        "draining": sessions.draining,
        "sessions": len(sessions.live),
        "tasks": len(asyncio.all_tasks()),
        "threads": threading.active_count(),
        **_process_usage(),
        **({"task_names": sorted(_describe(t) for t in asyncio.all_tasks()),
            "thread_names": sorted(t.name for t in threading.enumerate())}
           if "detail" in request.query else {}),
    })


def _describe(task: asyncio.Task[Any]) -> str:
    coro = task.get_coro()
    return getattr(coro, "__qualname__", None) or task.get_name()


def _llm_key(session: Session) -> int | None:
    """The session's sequence key in the shared LLM (None before its conversation opens)."""
    if session.conversation is None:
        return None
    responder = session.conversation.models.responder
    return responder.key if isinstance(responder, Sequenced) else None


def _process_usage() -> dict[str, int]:
    """Open file descriptors and resident memory, from /proc (empty where there is none)."""
    try:
        fds = len(os.listdir("/proc/self/fd"))
        with open("/proc/self/statm") as statm:
            rss = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return {}
    return {"fds": fds, "rss_bytes": rss}


def make_app(engine: Engine, options: ServerOptions | None = None,
             access: acl.AccessPolicy | None = None) -> web.Application:
    """The server. `access` defaults to loopback's: no credential, loopback Host names."""
    sessions = Sessions(engine, options or ServerOptions())
    policy = access or acl.AccessPolicy()
    # The access rules run inside `refusals`, so their refusals are answered (and counted).
    app = web.Application(client_max_size=MAX_OFFER_BYTES,
                          middlewares=[refusals(sessions.count_refusal), acl.middleware(policy)])
    app[SESSIONS] = sessions
    app[ACCESS] = policy
    app.on_response_prepare.append(acl.security_headers)
    app.router.add_get("/", index)
    app.router.add_get("/pair", pair_page)
    app.router.add_post("/pair", pair)
    app.router.add_get("/dashboard", dashboard)
    app.router.add_static("/static", WEB_DIR)
    app.router.add_post("/offer", offer)
    app.router.add_get("/api/turns", api_turns)
    app.router.add_get("/api/stats", dash.api_stats)
    app.router.add_get("/ws/dashboard", dash.feed)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", health)
    add_realtime(app)  # GET /v1/realtime: the OpenAI-Realtime-compatible websocket

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
