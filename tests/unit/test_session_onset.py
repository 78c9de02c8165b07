"""Browser TTFA reaches the turn records: the page's audio_onset on the data channel, the
session's validation, and the server's records, histograms and dashboard feed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from aiortc import RTCPeerConnection

from app.server import ServerOptions, Sessions
from app.transports.webrtc.session import Session
from pipeline.compute.stats import EngineStats
from pipeline.conversation import Conversation
from pipeline.conversation_events import Turn
from pipeline.timeline import SPEECH_END, TTFA_BROWSER, TTFA_SERVER, Timeline


def _turn(index: int, speech_end: float, sent: float) -> Turn:
    timeline = Timeline(turn=index, stamps={SPEECH_END: speech_end, TTFA_SERVER: sent})
    return Turn(index, "hello", "Hi there.", "Hi there.", False, timeline)


class FakeConversation:
    """The real `heard_at` matching over a scripted list of finished turns."""

    heard_at = Conversation.heard_at

    def __init__(self, *turns: Turn) -> None:
        self._reply = None
        self.turns = list(turns)


@pytest.fixture
async def session() -> AsyncIterator[Session]:
    pc = RTCPeerConnection()
    heard: list[Turn] = []
    made = Session(pc, SimpleNamespace(), idle_timeout=5.0,  # type: ignore[arg-type]
                   on_turn=lambda _s, _t: None, on_closed=lambda _s: None,
                   on_heard=lambda _s, turn: heard.append(turn))
    made.heard = heard  # type: ignore[attr-defined]
    yield made
    await pc.close()


def _sent(session: Session) -> list[dict[str, Any]]:
    return [json.loads(message) for message in session._pending]


@pytest.mark.parametrize("value", ["12.5", None, True, float("nan"), float("inf"), [1.0]],
                         ids=["string", "missing", "bool", "nan", "inf", "list"])
async def test_audio_onset_without_a_finite_number_gets_an_error_event(
        session: Session, value: object) -> None:
    session.conversation = FakeConversation(_turn(1, 10.0, 10.5))  # type: ignore[assignment]
    message = {"type": "audio_onset"} if value is None else {"type": "audio_onset",
                                                              "server_t": value}
    session._on_message(json.dumps(message, allow_nan=True))
    events = _sent(session)
    assert [e["type"] for e in events] == ["error"]
    assert "server_t" in events[0]["message"]
    assert not session.conversation.turns[0].timeline.has(TTFA_BROWSER)  # type: ignore[union-attr]


async def test_audio_onset_stamps_browser_ttfa_and_reports_a_recorded_turn(
        session: Session) -> None:
    turn = _turn(1, 10.0, 10.5)
    session.conversation = FakeConversation(turn)  # type: ignore[assignment]
    session._on_message(json.dumps({"type": "audio_onset", "server_t": 10.58}))
    stamped = session.conversation.turns[0]  # type: ignore[union-attr]
    assert stamped.timeline.ms(TTFA_BROWSER) == pytest.approx(580.0)
    assert session.heard == [stamped]  # type: ignore[attr-defined]
    assert not turn.timeline.has(TTFA_BROWSER)  # the recorded turn is replaced, not changed
    assert _sent(session) == []


async def test_audio_onset_before_the_reply_was_sent_stamps_nothing(session: Session) -> None:
    turn = _turn(1, 10.0, 10.5)
    session.conversation = FakeConversation(turn)  # type: ignore[assignment]
    session._on_message(json.dumps({"type": "audio_onset", "server_t": 10.4}))
    assert not turn.timeline.has(TTFA_BROWSER)
    assert session.heard == []  # type: ignore[attr-defined]


async def test_audio_onset_with_no_conversation_is_ignored(session: Session) -> None:
    session._on_message(json.dumps({"type": "audio_onset", "server_t": 3.0}))
    assert _sent(session) == []


def _sessions() -> Sessions:
    engine = SimpleNamespace(stats=EngineStats(), cpu=None, llm_memory=None)
    return Sessions(engine, ServerOptions())  # type: ignore[arg-type]


def test_a_late_browser_ttfa_updates_the_record_histogram_and_dashboards() -> None:
    sessions = _sessions()
    owner = SimpleNamespace(id=7)
    turn = _turn(1, 10.0, 10.5)
    sessions.record_turn(owner, turn)  # type: ignore[arg-type]
    feed = sessions.hub.join()
    turn.timeline.stamp(TTFA_BROWSER, 10.6)
    sessions.record_heard(owner, turn)  # type: ignore[arg-type]
    sessions.record_heard(owner, turn)  # type: ignore[arg-type]  # a repeat changes nothing
    record = sessions.turns[-1]
    assert record["timeline_ms"][TTFA_BROWSER] == pytest.approx(600.0)
    assert record["waterfall"][-1] == {"name": TTFA_BROWSER, "start_ms": 500.0, "end_ms": 600.0}
    assert [json.loads(m)["type"] for m in feed.messages] == ["turn"]
    scraped = sessions.metrics.render().decode()
    assert 'apace_ttfa_seconds_count{where="browser"} 1.0' in scraped


def test_recorded_turns_carry_their_waterfall_and_feed_the_stats() -> None:
    sessions = _sessions()
    sessions.record_turn(SimpleNamespace(id=1), _turn(1, 10.0, 10.9))  # type: ignore[arg-type]
    sessions.record_turn(SimpleNamespace(id=1), _turn(2, 20.0, 20.5))  # type: ignore[arg-type]
    assert sessions.turns[0]["waterfall"] == [
        {"name": TTFA_SERVER, "start_ms": 0.0, "end_ms": 900.0}]
    stats = sessions.stats()
    assert stats["slo"] == {"objective_ms": 800.0, "met": 1, "count": 2, "attainment": 0.5}
    assert stats["latency"]["ttfa_server"]["p50"] == 700.0
    assert stats["sessions"] == 0 and stats["window"] == 2
    assert stats["engine"]["turns"] == 0  # the engine's own counters, as they are
