"""One reply under load: what the engine's policy (pipeline.compute.degrade) takes from it.

A `Reply` holds one of these when its conversation shares an engine's `LoadBoard`. It
asks the board before the reply's LLM pass starts (a speculative pass may be held until
the endpoint commits the turn; a confirmed one may be made short and preceded by "One
moment.") and again at the commit of a speculation whose LLM pass is already under way.
It also says how the reply uses the LLM (`use`), which is what the other sessions'
decisions read, and feeds the board each confirmed reply's wait for its first token.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from pipeline.compute.degrade import ONE_MOMENT_TEXT, Degradation, LlmUse, LlmUser, LoadBoard, Plan
from pipeline.compute.workers import Priority
from pipeline.events import Pcm
from pipeline.speaker import Speaker
from pipeline.timeline import now


@dataclass(eq=False)
class UnderLoad:
    board: LoadBoard
    user: LlmUser
    """The conversation the reply is for (left out of its own snapshot)."""
    tags: set[Degradation] = field(default_factory=set)
    """What the reply gave up: the turn carries it (Turn.degraded); "one-moment" once it
    was said."""
    plan: Plan | None = None
    """The confirmed reply's plan (its caps), once decided."""
    asked_at: float | None = None
    first_at: float | None = None
    over: bool = False
    ahead: int | None = None
    """Other confirmed replies in flight when this one asked the LLM, confirmed."""
    moment_wanted: bool = False
    moment: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when "One moment." is wanted, or when it no longer can be (audio began)."""
    audio_out: bool = False

    async def before_llm(self, speculative: bool, committed: asyncio.Event) -> None:
        """Just before the LLM pass: a speculative one waits for the commit while another
        session's confirmed reply is in flight. Cancel-safe (nothing to undo)."""
        if speculative:
            plan = self.board.decide(self.user, now(), speculative=True)
            if Degradation.NO_SPECULATION not in plan.tags:
                self.asked_at = now()
                return
            self.tags |= plan.tags
            await committed.wait()
        self._confirmed(self.board.decide(self.user, now(), speculative=False))
        self.ahead = self.plan.load.others_confirmed if self.plan is not None else None
        self.asked_at = now()

    def committed(self) -> None:
        """The turn was committed while its speculative LLM pass was under way."""
        if self.asked_at is not None and not self.over and self.plan is None:
            self._confirmed(self.board.decide(self.user, now(), speculative=False))

    def first_token(self) -> None:
        if self.first_at is not None:
            return
        self.first_at = now()
        if self.ahead is not None and self.asked_at is not None:
            self.board.measured(self.first_at - self.asked_at, self.ahead)

    def done(self) -> None:
        self.over = True

    def use(self, *, confirmed: bool) -> LlmUse | None:
        if self.asked_at is None or self.over:
            return None
        return LlmUse(confirmed, self.asked_at, self.first_at is not None)

    def lift(self, usual: Priority) -> Priority:
        """`usual`, or a confirmed turn's priority while the policy is on and another
        session's confirmed reply is in flight (skills first: a transcription or a skill's
        speech waits one LLM step at most, not the other reply's whole decoding)."""
        busy = self.board.options.enabled and self.board.load(self.user, now()).others_confirmed
        return Priority.CONFIRMED if busy else usual

    def caps(self, sentences: int, words: int) -> tuple[int, int]:
        """The reply's sentence and word budgets, a short reply's caps applied."""
        plan = self.plan
        if plan is None or plan.sentences is None or plan.words is None:
            return sentences, words
        return min(sentences, plan.sentences), min(words, plan.words)

    def audio_started(self) -> None:
        """The reply's own audio is going out: too late for "One moment."."""
        self.audio_out = True
        self.moment.set()

    async def one_moment(self, say: Callable[[str], Awaitable[Pcm]], speaker: Speaker) -> None:
        """An honest "One moment." ahead of a reply the LLM will be slow to start (the
        policy's last resort), if it is wanted before the reply's own audio goes out: not
        the reply, so not in its text, timeline or history. Ends once the reply's audio
        starts. Cancel-safe."""
        await self.moment.wait()
        if not self._moment_due():
            return
        pcm = await say(ONE_MOMENT_TEXT)
        if self._moment_due():  # still nothing of the reply out
            speaker.push(pcm)
            self.tags.add(Degradation.ONE_MOMENT)

    def _moment_due(self) -> bool:
        return self.moment_wanted and not self.audio_out

    def _confirmed(self, plan: Plan) -> None:
        self.plan = plan
        self.tags |= plan.tags - {Degradation.ONE_MOMENT}  # that one once it is said
        if Degradation.ONE_MOMENT in plan.tags and self.first_at is None:  # not decoding yet
            self.moment_wanted = True
            self.moment.set()
