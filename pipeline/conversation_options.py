"""How a conversation behaves: its options (pipeline.conversation runs them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pipeline.answer.clauses import ClauseOptions
from pipeline.answer.integrity import IntegrityOptions
from pipeline.compute.degrade import DegradeOptions
from pipeline.events import Pcm, VadEvent
from pipeline.listen.endpointing import EndpointOptions
from pipeline.listen.vad import VadOptions
from pipeline.room import RoomOptions


@dataclass(frozen=True, kw_only=True)
class ConversationOptions:
    """How a conversation behaves. Durations in milliseconds. Why the defaults are what they
    are: docs/latency.md (speculation, endpointing, the early verdict) and docs/rooms.md
    (holding and interrupting a reply that is talked over)."""

    vad: VadOptions = field(default_factory=VadOptions)
    speculate: bool = True
    """Start the reply at silence onset and play it at the endpoint (docs/how-it-works.md)."""
    barge_in_ms: int = 200
    """Confirmed speech over a playing reply that is not held that interrupts it (default
    200). Only what the room gate confirms counts: not our echo, not the room."""
    hold_ms: int | None = 100
    """Confirmed speech over a playing reply, in a started turn, that holds it quiet (nothing
    plays, nothing is dropped) until the turn's words decide (pipeline.turn.talk_over);
    default 100, where a turn starts (VadOptions.start_ms). None: no hold."""
    held_barge_in_ms: int | None = 800
    """Confirmed speech over a held reply that interrupts it before its words are heard
    (default 800); a turn that pauses sooner is decided by its words. None: barge_in_ms,
    held or not."""
    hold_release_ms: int = 200
    """Once the held turn has ended (its words heard), the reply goes on when nothing has
    been confirmed for this long."""
    room: RoomOptions = field(default_factory=RoomOptions)
    """Telling the user from the room: its noise, background talk, our own echo."""
    endpoint: EndpointOptions | None = field(default_factory=EndpointOptions)
    """Adaptive endpointing from the speculative transcript (None: fixed endpoint_ms)."""
    early_verdict: bool = True
    """The turn detector judges a speculative transcript before the LLM reads it, so a
    finished turn's endpoint does not wait for the reply's first clause (default True;
    False: once the first clause is written, the `--late-verdict` lever)."""
    hear_unsure: bool = True
    """A turn the turn detector is unsure of (it waits 1.0-1.2 s to end) is heard again by
    the second ear, where there is one, before the LLM reads it (docs/quality.md)."""
    clauses: ClauseOptions = field(default_factory=ClauseOptions)
    """How reply text is cut for TTS (first clause early: docs/latency.md)."""
    partial_interval_s: float | None = 1.0
    """Live captions: transcribe the utterance so far this often (None: off). They run at
    background priority, behind every confirmed or speculative job."""
    prefill_captions: bool = True
    """While the user speaks, the LLM and the turn detector read the words a caption has
    settled on (all but its last word), so that at silence onset only the rest is left."""
    integrity: IntegrityOptions = field(default_factory=IntegrityOptions)
    """What the LLM reads of the history, the copy guard, the spoken-length budget."""
    owner: str = "default"
    """Whose shopping list and notes the skills read and change."""
    degrade: DegradeOptions = field(default_factory=DegradeOptions)
    """What a turn gives up when other conversations' confirmed replies need the shared
    LLM (pipeline.compute.degrade, docs/scaling.md; `--no-degrade`: nothing)."""

    def __post_init__(self) -> None:
        if self.barge_in_ms < 0:
            raise ValueError(f"barge_in_ms must be >= 0, got {self.barge_in_ms}")
        if self.hold_ms is not None and not 0 < self.hold_ms < self.barge_in_ms:
            raise ValueError(f"hold_ms must be between 0 and barge_in_ms ({self.barge_in_ms})"
                             f" or None, got {self.hold_ms}")
        if self.held_barge_in_ms is not None and self.held_barge_in_ms < self.barge_in_ms:
            raise ValueError(f"held_barge_in_ms must be >= barge_in_ms ({self.barge_in_ms}) or"
                             f" None, got {self.held_barge_in_ms}")
        if self.hold_release_ms <= 0:
            raise ValueError(f"hold_release_ms must be > 0, got {self.hold_release_ms}")


@dataclass(frozen=True, kw_only=True)
class TransportNeeds:
    """What a way in needs of its conversation, said when it is opened (`Engine.open`):
    no transport patches a running Conversation."""

    on_vad: Callable[[list[VadEvent]], None] | None = None
    """Told the endpointer's events of each frame before the conversation acts on them
    (Realtime's input_audio_buffer.speech_started/stopped)."""
    classify: Callable[[Pcm], bool] | None = None
    """Replaces webrtcvad's speech/no-speech call (tests)."""
    spoken: bool = True
    """Replies are spoken; False: text only, no TTS job at all (Wyoming's handle: Home
    Assistant speaks the reply through its own TTS step). `Conversation.speak_replies`
    changes it later (a Realtime session.update)."""
    rings: bool = True
    """Something carries a timer's ring to the user; False (Wyoming's handle: each
    exchange ends with its reply): the timer skill says so instead of setting one."""
