"""One apace node of a cluster: the models loaded once, the node's WebRTC sessions, and
its report to the placement book every second.

Ray runs `NodeServer` as one actor per machine, pinned there (app.cluster.control). Only
signalling reaches it through Ray — the offer, forwarded by the ingress — so its
RTCPeerConnections gather this machine's own host candidates and the browser's media
flows here directly, never through the ingress. The node is the single box's server
without its page: the same `Sessions` (cap, load admission, drain, turns, metrics) and
the same `answer_offer`; its Realtime and Wyoming clients reach it through the ingress,
piped to listeners that answer the ingress only (app.cluster.listeners).
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import time
from collections.abc import Callable
from typing import Any

from app.cluster.listeners import Endpoints, ListenerOptions, NodeListeners
from app.cluster.placement import NodeReport
from app.observe.logs import log_like_the_ingress
from app.observe.metrics import ttfa_ms
from app.security.limits import Refused
from app.server import ServerOptions, Sessions, answer_offer, parse_offer
from pipeline.engine import Engine

log = logging.getLogger(__name__)

REPORT_S = 1.0
"""How often a node tells the placement book how it is."""
CHECK_S = 0.1
"""How often it looks whether its number of sessions changed: a change is reported at
once, so a client that hangs up and calls again is not refused on a count a second old."""
RECENT_TURNS = 50
"""The turns its reported TTFA p50 covers."""


class NodeServer:
    """A node's conversations. `make_engine` builds (and warms) the models in a thread;
    `placement` receives a `NodeReport` each second (a Ray actor handle, or anything with
    `report.remote(report)`; None: no reports). `listeners`: open the node's Realtime
    (and Wyoming) listeners for the ingress (None: WebRTC only)."""

    def __init__(self, node: str, make_engine: Callable[[], Engine], options: ServerOptions,
                 placement: Any = None, *, loopback: bool = False,
                 listeners: ListenerOptions | None = None) -> None:
        log_like_the_ingress()
        self.node = node
        self.options = options
        self._make_engine = make_engine
        self._placement = placement
        self._loopback = loopback
        self._listeners = NodeListeners(listeners) if listeners is not None else None
        self.sessions: Sessions | None = None
        self._reporter: asyncio.Task[None] | None = None

    async def start(self) -> Endpoints:
        """Load the models, open the listeners, then report from now on. Returns where
        the listeners are."""
        if self._loopback:  # every node on one machine (tests, a laptop): media on loopback
            from app.serve import use_loopback_candidates

            use_loopback_candidates()
        engine = await asyncio.to_thread(self._make_engine)
        await engine.warm()
        self.sessions = Sessions(engine, self.options)
        endpoints = Endpoints()
        if self._listeners is not None:
            endpoints = await self._listeners.start(self.sessions)
        self._reporter = asyncio.create_task(self._report_loop(), name="node-report")
        return endpoints

    async def offer(self, data: dict[str, Any]) -> dict[str, Any]:
        """An offer forwarded by the ingress: {status, body, headers} as the single box
        would answer it (200 with the SDP answer, or a 4xx/503 with the reason)."""
        sessions = self._live()
        try:
            sessions.admit()
            description, stream = parse_offer(data)
            answer = await answer_offer(sessions, description, stream)
        except Refused as refused:
            sessions.count_refusal(refused)
            return {"status": refused.status, "body": {"error": refused.reason},
                    "headers": refused.headers, "kind": refused.kind}
        await self._report_now()  # the placement book learns of the new session now
        return {"status": 200, "body": {**answer, "node": self.node}, "headers": {}}

    def report(self) -> NodeReport:
        sessions = self._live()
        open_now = sessions.open_sessions()
        sessions.sample_load()
        verdict = sessions.load.verdict(open_now)
        admits = verdict.admit or not self.options.admit_by_load
        ttfas = [ms for turn in list(sessions.turns)[-RECENT_TURNS:]
                 if (ms := ttfa_ms(turn["timeline_ms"])) is not None]
        return NodeReport(self.node, open_now, self.options.max_sessions, admits,
                          "" if admits else verdict.reason, sessions.load.busy_share() or 0.0,
                          statistics.median(ttfas) if ttfas else None, sessions.draining)

    def turns(self) -> list[dict[str, Any]]:
        return [{**turn, "node": self.node} for turn in self._live().turns]

    def stats(self) -> dict[str, Any]:
        return {**self._live().stats(), "node": self.node}

    def metrics(self) -> bytes:
        return self._live().metrics.render()

    def health(self) -> dict[str, Any]:
        sessions = self._live()
        return {"node": self.node, "sessions": sessions.open_sessions(),
                "draining": sessions.draining, "tasks": len(asyncio.all_tasks()),
                "rss_bytes": sessions.memory().get("rss_bytes")}

    async def stop(self) -> None:
        """End every conversation and release the models."""
        if self._reporter is not None:
            self._reporter.cancel()
            await asyncio.wait([self._reporter])
        if self._listeners is not None:
            await self._listeners.close()
        if self.sessions is not None:
            await self.sessions.close_all()
            self.sessions.engine.close()
            self.sessions = None

    def _live(self) -> Sessions:
        if self.sessions is None:
            raise RuntimeError(f"node {self.node} is not started")
        return self.sessions

    async def report_now(self) -> None:
        """Tell the placement book how this node is now (the ingress asks when a session
        it piped here ended)."""
        await self._report_now()

    async def _report_now(self) -> None:
        if self._placement is None or self.sessions is None:
            return
        try:
            await _ref(self._placement.report.remote(self.report()))
        except Exception:  # the placement actor is being restarted: the next report will do
            log.warning("node %s could not report", self.node, exc_info=True)

    async def _report_loop(self) -> None:
        reported: tuple[int, float] | None = None  # (sessions, when)
        while True:
            count = self._live().open_sessions()
            if reported is None or count != reported[0] \
                    or time.monotonic() - reported[1] >= REPORT_S:
                reported = (count, time.monotonic())
                await self._report_now()
            await asyncio.sleep(CHECK_S)


async def _ref(ref: Any) -> Any:
    """Await a Ray ObjectRef (or any awaitable, or a plain value from a local fake)."""
    if hasattr(ref, "__await__"):
        return await ref
    return ref
