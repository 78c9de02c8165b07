"""What a conversation tells the outside world, and the one way it goes on the wire.

A Conversation reports through `Emit`, called with one of the frozen dataclasses below;
a transport matches on the class. A session adds a few notices of its own (`Ready`,
`Pong`, `GoingAway`). `to_wire` is the only conversion to JSON-ready data — `{"type": …,
fields…}`, `type` first — for the browser's data channel, the dashboard feed,
`/api/turns`, `apace talk --json` and the Realtime transport's `apace.*` events.

The wire contract the page's JavaScript reads is `web/events.schema.json`
(docs/events.md explains it); tests/unit/test_conversation_events.py holds every class
here to it, so a renamed or retyped field fails a test before it breaks the page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from pipeline.timeline import SPEECH_END, Timeline


@dataclass(frozen=True)
class UserSpeaking:
    """Sustained speech began: the page shows that it hears the user."""

    type: ClassVar[str] = "speech_started"


@dataclass(frozen=True)
class Transcript:
    """What the user said: a live caption while they speak (`final` False, the whole
    utterance so far each time), then the transcript a reply answers (`final` True,
    shown once that reply is committed)."""

    type: ClassVar[str] = "transcript"
    text: str
    final: bool


@dataclass(frozen=True)
class ReplyDelta:
    """A piece of a committed reply's text, as it is written."""

    type: ClassVar[str] = "reply_delta"
    text: str


@dataclass(frozen=True)
class BargeIn:
    """The reply was cut: the user talked over it (`reason` "speech") or a client
    cancelled it. `dropped_ms` of queued reply audio never played."""

    type: ClassVar[str] = "barge_in"
    dropped_ms: int
    reason: str


@dataclass(frozen=True)
class Turn:
    """A finished exchange, as reported to the CLI, the page and the dashboard."""

    type: ClassVar[str] = "turn"
    index: int
    transcript: str
    reply: str
    heard: str
    """What the user heard of the reply: all of it, or the played share if interrupted."""
    interrupted: bool
    timeline: Timeline
    """On the wire as `timeline_ms` (ms from the end of speech) and `speech_end_t`."""
    done_logprob: float | None = None
    """The turn detector's last verdict on the user's words (None: not asked)."""
    skill: str | None = None
    """The built-in skill that answered (None: the LLM did)."""
    source: str | None = None
    """Where that skill's facts come from (a data package and its version), if it says."""
    copies: int = 0
    """Replies the copy guard threw away before this one (regenerated)."""
    quality: dict[str, Any] = field(default_factory=dict)
    """Rule-free checks of the reply (pipeline.quality.turn_flags): repeat, echo, length."""
    degraded: tuple[str, ...] = ()
    """What the turn gave up under load (pipeline.compute.degrade: "no-speculation",
    "short", "one-moment"), sorted; empty when it got everything."""
    first_heard: str | None = None
    """What the first ear heard, when the second ear heard the turn again and a skill took
    its words (`transcript`) instead (pipeline.answer.second_hearing); None: heard once."""


@dataclass(frozen=True)
class Error:
    """Something failed (a reply, or a message the client sent); the session goes on."""

    type: ClassVar[str] = "error"
    message: str


@dataclass(frozen=True)
class TimerInfo:
    """One running timer, alarm or reminder, as the page lists it."""

    id: int
    kind: str
    """One of "timer", "alarm", "reminder"."""
    name: str | None
    label: str
    due_in_s: float
    paused: bool = False
    """Paused: `due_in_s` is the time it has left, and it is not counting down."""


@dataclass(frozen=True)
class TimerList:
    """Every running timer, soonest first: sent whenever the set changes."""

    type: ClassVar[str] = "timers"
    timers: tuple[TimerInfo, ...]


@dataclass(frozen=True)
class TimerFired:
    """A timer rang: its chime went out, `text` is the line spoken after it."""

    type: ClassVar[str] = "timer_fired"
    id: int
    kind: str
    name: str | None
    label: str
    text: str
    late_ms: float
    """How late the chime was queued, after the timer's due time."""


@dataclass(frozen=True)
class Ready:
    """The session's conversation is open: the user may talk."""

    type: ClassVar[str] = "ready"


@dataclass(frozen=True)
class Pong:
    """The answer to the page's ping: its own `t` back, and the server's clock."""

    type: ClassVar[str] = "pong"
    t: float | None
    server_t: float


@dataclass(frozen=True)
class GoingAway:
    """The server is about to end the session (shutdown, maximum age), and why."""

    type: ClassVar[str] = "going_away"
    message: str
    retry_after_s: float | None = None


ConversationEvent = (UserSpeaking | Transcript | ReplyDelta | BargeIn | Turn | Error
                     | TimerList | TimerFired)
"""Everything a Conversation emits."""
SessionEvent = Ready | Pong | GoingAway
"""What a transport's session adds on its own."""
WireEvent = ConversationEvent | SessionEvent

Emit = Callable[[ConversationEvent], None]


def to_wire(event: WireEvent) -> dict[str, Any]:
    """The event as JSON-ready data, `"type"` first: the one shape on every wire."""
    match event:
        case Turn():
            body = _turn_fields(event)
        case TimerList(timers=timers):
            body = {"timers": [_fields(timer) for timer in timers]}
        case _:
            body = _fields(event)
    return {"type": event.type, **body}


def _turn_fields(turn: Turn) -> dict[str, Any]:
    return {"index": turn.index, "transcript": turn.transcript, "reply": turn.reply,
            "heard": turn.heard, "interrupted": turn.interrupted,
            "timeline_ms": turn.timeline.relative_ms(), "done_logprob": turn.done_logprob,
            "skill": turn.skill, "source": turn.source, "copies": turn.copies, "quality": dict(turn.quality),
            "degraded": list(turn.degraded), "first_heard": turn.first_heard,
            "speech_end_t": turn.timeline.stamps.get(SPEECH_END)}


def _fields(event: Any) -> dict[str, Any]:
    return {f.name: getattr(event, f.name) for f in fields(event)}
