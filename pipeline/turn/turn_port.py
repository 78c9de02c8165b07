"""The turn port: what the turn-taking wing (pipeline.turn.talk_over, pipeline.turn.rehearing,
pipeline.turn.captions) may ask of the conversation it serves — nothing else of it.

The reply in flight (and through it, its heard share), the endpointer's facts, holding
and releasing the playing reply, interrupting it, starting one: a door with a list of
what passes, so the wing is tested against the port and never reads the Conversation's
insides. `pipeline.conversation.Conversation` implements it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pipeline.answer.llm import Message
    from pipeline.answer.model_calls import Models
    from pipeline.answer.reply import Reply
    from pipeline.compute.stats import SpeculationStats
    from pipeline.conversation_events import Emit
    from pipeline.conversation_options import ConversationOptions
    from pipeline.events import Endpoint, Pcm, SilenceOnset


class EndpointerFacts(Protocol):
    """What the wing reads of the user's turn as the endpointer sees it (pipeline.listen.vad)."""

    @property
    def speaking(self) -> bool: ...
    @property
    def pausing(self) -> bool: ...
    @property
    def confirmed_ms(self) -> int: ...
    @property
    def since_confirmed_ms(self) -> int: ...
    @property
    def silent_ms(self) -> int: ...
    @property
    def utterance_s(self) -> float: ...
    def utterance(self) -> Pcm: ...


class TurnPort(Protocol):
    @property
    def options(self) -> ConversationOptions: ...
    @property
    def endpointer(self) -> EndpointerFacts: ...
    @property
    def models(self) -> Models: ...
    @property
    def emit(self) -> Emit: ...
    @property
    def busy(self) -> bool:
        """A reply is being prepared or played."""
    @property
    def in_flight(self) -> Reply | None:
        """The reply being prepared or played (speculative or committed), if any."""
    def models_now(self) -> Models:
        """The models a turn heard now uses (the noisy-room ear while the room is noisy)."""
    def spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
        """Run `work` in the conversation's task group (None, and `work` closed, when the
        conversation is not running)."""

    # holding the playing reply (pipeline.speaker: nothing plays, nothing is dropped)
    @property
    def reply_held(self) -> bool: ...
    def hold_reply(self) -> None: ...
    def release_reply(self) -> None: ...

    # ending or starting a reply
    def barge_in(self, reply: Reply, reason: str) -> None: ...
    def interrupt(self, *, reason: str = ...) -> bool: ...
    def start_turn(self, *, audio: Any = None, text: str | None = None) -> bool: ...
    def speculating(self) -> Reply | None: ...
    def speculate(self, onset: SilenceOnset, *, text: str | None = None) -> None: ...
    def cancel_speculation(self, reason: str = ...) -> None: ...
    def speculation_stats(self) -> tuple[SpeculationStats, ...]: ...
    def on_endpoint(self, event: Endpoint) -> None: ...
    def llm_history(self) -> list[Message]: ...
