"""The server refuses a session by measured load (503, Retry-After, a JSON reason) before
the admitted ones are pushed past the TTFA objective; --no-admission turns it off."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from app.security.limits import Refused
from app.server import ServerOptions, Sessions
from pipeline.compute.stats import EngineStats


def busy_sessions(options: ServerOptions, live: int) -> Sessions:
    cpu = SimpleNamespace(held_s=36.0)  # the CPU lock was held 36 s of the last 60
    engine = SimpleNamespace(stats=EngineStats(), cpu=cpu, llm_memory=None)
    sessions = Sessions(engine, options)  # type: ignore[arg-type]
    sessions.live = {i: SimpleNamespace(closing=False) for i in range(live)}  # type: ignore[misc]
    start = time.monotonic() - 60
    sessions.load.busy_total(start, 0.0)
    for i in range(10):
        sessions.load.turn(start + 5 * i, 700.0)
    return sessions


def test_a_session_that_would_break_the_objective_is_refused_with_a_reason() -> None:
    sessions = busy_sessions(ServerOptions(), live=2)
    with pytest.raises(Refused) as refused:
        sessions.admit()
    assert refused.value.status == 503 and refused.value.kind == "load"
    assert refused.value.headers["Retry-After"] == str(ServerOptions().retry_after_s)
    body = json.loads(refused.value.response().body)  # type: ignore[arg-type]
    assert "800 ms objective" in body["error"]


def test_admission_by_load_can_be_turned_off_and_the_hard_cap_stays() -> None:
    sessions = busy_sessions(ServerOptions(admit_by_load=False, max_sessions=3), live=2)
    sessions.admit()  # the load is ignored
    sessions.live[2] = SimpleNamespace(closing=False)  # type: ignore[assignment]
    with pytest.raises(Refused) as refused:
        sessions.admit()
    assert refused.value.kind == "full"


def test_other_ways_in_count_against_the_cap_and_are_closed_when_draining() -> None:
    import asyncio

    sessions = busy_sessions(ServerOptions(admit_by_load=False, max_sessions=3), live=1)
    realtime = [object(), object()]
    closed: list[bool] = []

    async def close_realtime() -> None:
        closed.append(True)
        realtime.clear()

    sessions.others.append(lambda: len(realtime))
    sessions.closers.append(close_realtime)
    sessions.live = {}
    with pytest.raises(Refused) as refused:  # 1 WebRTC + 2 Realtime = 3 of 3
        sessions.live[0] = SimpleNamespace(closing=False)  # type: ignore[assignment]
        sessions.admit()
    assert refused.value.kind == "full"
    sessions.live = {}
    asyncio.run(sessions.drain())
    assert closed == [True] and sessions.open_sessions() == 0


def test_a_session_already_closing_does_not_count() -> None:
    sessions = busy_sessions(ServerOptions(admit_by_load=False, max_sessions=2), live=2)
    with pytest.raises(Refused):
        sessions.admit()
    sessions.live[1].closing = True  # its client hung up; it is finishing
    sessions.admit()
    assert sessions.open_sessions() == 1


def test_a_realtime_session_whose_client_left_does_not_count() -> None:
    import asyncio

    from app.transports.realtime.route import LiveRealtime

    live = LiveRealtime()
    talking, finishing, stopped = (SimpleNamespace(stop=asyncio.Event()) for _ in range(3))
    stopped.stop.set()
    live.sessions = {"a": (talking, SimpleNamespace(closed=False)),  # type: ignore[dict-item]
                     "b": (finishing, SimpleNamespace(closed=True)),
                     "c": (stopped, SimpleNamespace(closed=False))}
    assert len(live) == 3 and live.open_count() == 1
