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
    vad: VadOptions = field(default_factory=VadOptions)
    speculate: bool = True
    """Start the reply at silence onset and play it at the endpoint (docs/how-it-works.md)."""
    barge_in_ms: int = 200
    """Speech needed to interrupt the assistant: a cough is shorter. Only what the room
    gate confirms counts (not our echo, not the room; pipeline.room), so it can be short:
    bursts of background talk confirmed <= 100 ms, a user talking over a reply reached
    200 ms 200-300 ms after their first sound (300 ms took 320-540)."""
    hold_ms: int | None = 100
    """Confirmed speech over a playing reply that holds it (nothing plays, nothing is
    dropped): a barge-in's first sign, so the reply goes quiet ~80 ms before one is
    decided — on the room bench the reply stopped ~400 ms after the user's first sound
    with barge_in_ms alone. 100 ms is where a turn starts (VadOptions.start_ms): the reply
    holds as the user's turn does. Against 120 ms, in two paired talk-over runs
    (docs/rooms.md), the first reply stopped 340 ms after the user's first sound on
    average against 393 (8 each), the later ones at a median 261 against 311 ms; 2 of 29
    stops took over 400 ms against 8 of 32; no reply was held by background talk. A held
    turn that stops short of held_barge_in_ms keeps the reply held until it pauses and its
    words are heard (pipeline.turn.talk_over): words interrupt the reply and are answered
    ("Wait.", "Stop." are confirmed for 140-180 ms, and used to let the reply go on and
    be dropped); none (a cough) or a listener's "mm-hm" let it go on
    from the frame it stopped at (LiveKit Agents resumes a "false interruption" the same
    way). Background talk in bursts was confirmed for <= 100 ms: holding at 80 ms, as a
    turn starts (and, in a quiet room, from before it started), the room bench's replies
    were held and let go on 6-12 times a session in echo and talk, and 4 of ~25
    talk-overs went on for 1-5 s (docs/rooms.md); a hold needs a started turn
    now, and the words of a burst that starts one decide. None: off."""
    held_barge_in_ms: int | None = 800
    """Confirmed speech over a *held* reply that interrupts it before its words are heard.
    A turn that pauses sooner is decided by its words, heard at the pause as a speculation
    is (pipeline.turn.talk_over): a listener's "mm-hm", "okay", "I see" let the reply go on
    (Piper saying them over a reply: 120-740 ms confirmed; at barge_in_ms alone they cut
    it), other words interrupt it. The reply is quiet from hold_ms either way. None:
    barge_in_ms, held or not."""
    hold_release_ms: int = 200
    """Once the held turn has ended (its words heard), the reply goes on when nothing has
    been confirmed for this long."""
    room: RoomOptions = field(default_factory=RoomOptions)
    """Telling the user from the room: its noise, background talk, our own echo."""
    endpoint: EndpointOptions | None = field(default_factory=EndpointOptions)
    """Adaptive endpointing from the speculative transcript (None: fixed endpoint_ms)."""
    early_verdict: bool = True
    """The turn detector judges a speculative transcript before the LLM reads it, so the
    endpoint of a finished turn comes ~0.3 s after the speech (False: once the reply's
    first clause is written, as before; docs/latency.md)."""
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
