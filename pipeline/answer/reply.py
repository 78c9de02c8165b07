"""One reply attempt: utterance audio → transcript → LLM → clauses → TTS → speaker.

A reply starts *speculative* at silence onset: it transcribes, thinks and synthesizes into
a buffer but plays nothing. `commit()` at the endpoint releases its audio to the speaker;
cancelling it (the user resumed, or barged in) stops its model work at the next item.
The LLM and TTS run concurrently: clause 2 is generated while clause 1 is synthesized.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.answer.claims import NOT_DONE, claims_action, clock_claim
from pipeline.answer.clauses import ClauseOptions, ClauseSplitter
from pipeline.answer.integrity import (
    CopyGuard,
    IntegrityOptions,
    earlier_replies,
    prompt_history,
    sentence_budget,
    word_budget,
)
from pipeline.answer.llm import Message, Promotes, Responder, TakesTools
from pipeline.answer.model_calls import Models
from pipeline.answer.second_hearing import hear_again, hear_unsure
from pipeline.answer.telling import Budget, Telling
from pipeline.answer.tools import may_be_call, may_call, refused, request_for, without_markers
from pipeline.answer.under_load import UnderLoad
from pipeline.answer.voicing import Voicing
from pipeline.compute.degrade import Degradation
from pipeline.compute.gate import Gate
from pipeline.compute.workers import Priority
from pipeline.conversation_events import ConversationEvent, Emit, ReplyDelta, Transcript
from pipeline.events import Clause, Pcm
from pipeline.skills.base import SkillReply
from pipeline.speaker import Speaker
from pipeline.timeline import (
    ASR_FINAL,
    FIRST_CLAUSE,
    LLM_START,
    TTFT,
    VERDICT,
    Timeline,
    now,
)

log = logging.getLogger(__name__)

NOT_CAUGHT = "Sorry, I didn't catch that."
"""Said when the LLM's only answer is a tool call that cannot be made (never the call)."""


@dataclass
class Reply:
    models: Models
    speaker: Speaker
    history: Sequence[Message]
    audio: Pcm
    timeline: Timeline
    emit: Emit
    speculative: bool
    clause_options: ClauseOptions | None = None
    find_draft: Callable[[str], str | None] | None = None
    """An expected reply for a transcript (reply cache, re-speculation): a decoding hint."""
    integrity: IntegrityOptions = field(default_factory=IntegrityOptions)
    """What the LLM reads of `history`, copy guard, spoken-length budget."""
    answer_skill: Callable[[str], SkillReply | None] | None = None
    """A built-in skill's answer to a transcript (None: the LLM answers)."""
    on_action: Callable[[SkillReply], None] | None = None
    """Called after a skill's action ran (the turn was committed)."""
    early_verdict: bool = True
    """Ask the turn detector as soon as the transcript is in (ConversationOptions)."""
    spoken: bool = True
    """False: the reply is text only (a client that asked for no audio): no TTS job is
    queued and no audio made; each clause counts as heard once it is written."""
    under_load: UnderLoad | None = None
    """The engine's degradation policy for this reply (None: none, e.g. a lone conversation)."""
    skill: SkillReply | None = None
    copies: int = 0
    """Replies thrown away because they copied an earlier one (then regenerated)."""
    passes: int = 0
    """LLM passes made for this reply: one, unless a copy or a refused tool call made the
    LLM answer again (each pass puts its first token after the last one's end)."""
    transcript: str | None = None
    """Heard from `audio` by the ASR worker; given (a typed turn): no ASR job at all."""
    first_heard: str | None = None
    """The first ear's words, when the second ear heard the turn again and a skill took
    its words instead (pipeline.answer.second_hearing); None: heard once."""
    done_logprob: float | None = None
    """The turn detector's verdict on the transcript (speculative replies only)."""
    rehear_below: float | None = None
    """A verdict under this (unsure: the turn waits 1.0-1.2 s to end) has the second ear
    hear the turn again before the LLM reads it (second_hearing.hear_unsure); None: never."""
    judging: bool = False
    """The turn detector is working on the transcript: its verdict is still to come."""
    text: str = ""
    tokens: int = 0
    llm_seconds: float = 0.0
    started: float = field(default_factory=now)
    committed: asyncio.Event = field(default_factory=asyncio.Event)
    _held: list[ConversationEvent] = field(default_factory=list)
    _llm_gate: Gate = field(default_factory=Gate)
    _clause_ready: asyncio.Event = field(default_factory=asyncio.Event)
    """Clause 1 is written (or there will be none): the turn detector may run."""
    _verdict_in: asyncio.Event = field(default_factory=asyncio.Event)
    """The turn detector has answered (or is not asked): clause 1's audio may be made."""
    _acted: bool = False
    _telling: Telling = field(init=False, repr=False)
    _sentence_budget: int = 0
    _heard: bool = False
    """The words came from the audio (not typed)."""
    _voice: Voicing = field(init=False)

    def __post_init__(self) -> None:
        clause_options = self.clause_options or ClauseOptions()
        self._llm_gate.lockstep = self.spoken and clause_options.lockstep
        self._telling = Telling(ClauseSplitter(self.clause_options), asyncio.Queue(),
                                self._on_clause)
        self._voice = Voicing(
            self.models, self.speaker, self.timeline, self.committed, self._verdict_in,
            self._llm_gate, self._tts_priority, spoken=self.spoken, under_load=self.under_load)

    @property
    def finished(self) -> asyncio.Event:
        """The reply is made and played out (or, text only, written)."""
        return self._voice.finished

    def _tts_priority(self) -> Priority:
        return self._skills_first() if self.skill is not None else self.priority

    @property
    def light(self) -> bool:
        """This reply's LLM pass is the light tier's (pipeline.compute.degrade, under load)."""
        plan = self.under_load.plan if self.under_load is not None else None
        return (plan is not None and Degradation.LIGHT in plan.tags
                and self.models.light_responder is not None
                and self.models.light_worker is not None)

    @property
    def _responder(self) -> Responder:
        light = self.models.light_responder
        return light if self.light and light is not None else self.models.responder

    def commit(self) -> None:
        """The user's turn is over: this reply may play (and be shown)."""
        self.speculative = False
        self.committed.set()
        if isinstance(self.models.responder, Promotes):  # a shared LLM: its job moves up
            self.models.responder.promote()
        if self.under_load is not None:
            self.under_load.committed()
        held, self._held = self._held, []
        for event in held:
            self.emit(event)
        self._act()

    def _act(self) -> None:
        """A skill's side effect, once, and only for a committed turn: a speculation the
        user then talked on from must change nothing."""
        skill = self.skill
        if skill is None or self._acted or not self.committed.is_set():
            return
        self._acted = True
        if skill.action is not None:
            try:
                skill.action()
            except Exception:  # the spoken reply stands; the turn goes on
                log.exception("skill %s failed to act", skill.skill)
        if self.on_action is not None:
            self.on_action(skill)

    def _show(self, event: ConversationEvent) -> None:
        # A speculative reply stays invisible: if the user resumes it never happened.
        if self.committed.is_set():
            self.emit(event)
        else:
            self._held.append(event)

    @property
    def priority(self) -> Priority:
        return Priority.SPECULATIVE if self.speculative else Priority.CONFIRMED

    def _skills_first(self) -> Priority:
        """The priority of the ASR job and of a skill's speech: under load, a confirmed
        turn's, so that they are never queued behind another session's LLM steps."""
        return self.under_load.lift(self.priority) if self.under_load else self.priority

    @property
    def played_text(self) -> str:
        """What the user actually heard: whole clauses, then the heard share of the next."""
        return self._voice.played_text

    @property
    def audio_s(self) -> float:
        """Seconds of reply audio made (all of it, heard or not)."""
        return self._voice.audio_s

    @property
    def played_s(self) -> float:
        return self._voice.played_s

    async def run(self) -> None:
        """Transcribe, think, speak; returns when the reply has played out.

        Cancel-safe: cancelling stops the model work at its next item; queued audio stays
        in the speaker for the caller to clear.
        """
        heard = self._heard = self.transcript is None
        if heard:  # typed words are never queued on the ASR worker
            self.transcript = await self.models.hear(self.audio, self._skills_first())
        if self.transcript and self.answer_skill is not None:
            self.skill = self.answer_skill(self.transcript)
            if heard and (self.skill is None or self.skill.found_nothing):
                await self._hear_again(self.answer_skill)
        self.timeline.stamp(ASR_FINAL)
        # Ask the turn detector only while the endpoint is still to come (speculating).
        self.judging = bool(self.transcript) and self.speculative and self.models.detector is not None
        if not self.transcript:
            return
        self._act()
        self._show(Transcript(self.transcript, final=True))
        async with asyncio.TaskGroup() as group:
            if self.judging:
                group.create_task(self._judge_turn())
            else:
                self._verdict_in.set()
            group.create_task(self._think())
            group.create_task(self._voice.speak(self._telling.clauses))
            if self.under_load is not None and self.spoken and self.skill is None:
                group.create_task(self.under_load.one_moment(self.models.say, self.speaker))
        await self.finished.wait()
        # Nothing to say (the hush skill) is played out at once: a speculation is still
        # not the turn's reply until the endpoint commits it.
        await self.committed.wait()

    async def _hear_again(self, answer_skill: Callable[[str], SkillReply | None]) -> None:
        """No skill took the words, or its request named nothing there: a skill's request
        misheard? (second_hearing)"""
        assert self.transcript is not None
        again = await hear_again(self.models, self.audio, self.transcript, answer_skill,
                                 self._skills_first())
        if again is not None:
            self.first_heard = self.transcript
            self.transcript, self.skill = again

    async def _hear_unsure(self) -> bool:
        """The turn detector was unsure of the first ear's words: the second ear's, if
        they differ, are the turn's words. True if a skill takes them (self.skill)."""
        below, verdict = self.rehear_below, self.done_logprob
        if (below is None or verdict is None or verdict >= below or not self._heard
                or self.first_heard is not None or self.transcript is None):
            return False
        again = await hear_unsure(self.models, self.audio, self.transcript, self.priority)
        if again is None:
            return False
        self.first_heard, self.transcript = self.transcript, again
        self._held = [Transcript(again, final=True) if isinstance(e, Transcript) else e
                      for e in self._held]
        if self.committed.is_set():
            self.emit(Transcript(again, final=True))
        skill = self.answer_skill(again) if self.answer_skill is not None else None
        if skill is None or skill.found_nothing:
            return False
        self.skill = skill
        return True

    async def _judge_turn(self) -> None:
        """The turn detector's verdict on the transcript, on its own worker and context.

        Asked first, before the LLM reads the words (early_verdict): the endpoint waits
        for it, so a finished turn ends ~0.3 s after the speech, not once clause 1 is
        written. Clause 1's audio is made after the verdict either way; the CPU does the
        same work in another order. Late (after clause 1), the endpoint of every LLM turn
        came at the statement wait's 1 s on a loaded box.
        """
        detector, worker = self.models.detector, self.models.detector_worker
        assert detector is not None and worker is not None and self.transcript is not None
        if not self.early_verdict:
            await self._clause_ready.wait()
        try:
            self.done_logprob = await worker.run(detector.done_logprob, self.transcript,
                                                 priority=self.priority)
        except Exception:  # the endpoint falls back to punctuation; the reply goes on
            log.exception("turn detector failed")
        self.judging = False
        self.timeline.stamp(VERDICT)
        self._verdict_in.set()

    async def _think(self) -> None:
        assert self.transcript is not None
        self._sentence_budget = sentence_budget(self.transcript, self.integrity)
        telling = self._telling
        try:
            if self.skill is not None:
                self.timeline.stamp(TTFT)
                self.text = self.skill.text
                self._show(ReplyDelta(self.skill.text))
                telling.say(self.skill.text, self._budget())
            else:
                await self._generate()
            telling.finish(self._budget())
        except BaseException:
            telling.end()
            raise
        finally:
            self._clause_ready.set()
        if self.skill is None:
            self.text = " ".join(telling.told)  # what is spoken, budget and guard applied

    async def _generate(self) -> None:
        """The LLM's reply; regenerated without history if it copies an earlier one."""
        assert self.transcript is not None
        if self.early_verdict:
            # The verdict first, always: it decides the endpoint, and the LLM reading the
            # words first on a shared CPU would make the endpoint wait for its prompt.
            await self._verdict_in.wait()
        if await self._hear_unsure():
            assert self.skill is not None
            self._act()
            self._say(self.skill.text)
            return
        options = self.integrity
        earlier = earlier_replies(self.history, self.transcript) if options.copy_guard else []
        history = prompt_history(self.history, options)
        if self.under_load is not None:  # under load: held till committed, or cut short
            await self.under_load.before_llm(self.speculative, self.committed)
        draft = self.find_draft(self.transcript) if self.find_draft is not None else None
        if self.light:
            draft = None  # drafts are the shared LLM's replies
        guard = CopyGuard(earlier, options)
        # Words no tool could be believed for: the LLM is kept from a call from the start.
        plain = _uses_tools(self._responder) and not may_call(self.transcript)
        try:
            await self._stream(history, draft, guard, plain=plain)
            if guard.copied is not None:
                log.info("reply copied an earlier one (%r): regenerating without history",
                         guard.copied[:60])
                self.copies += 1
                await self._stream([], None, CopyGuard([], options), plain=plain)
        finally:
            if self.under_load is not None:
                self.under_load.done()

    async def _stream(self, history: Sequence[Message], draft: str | None, guard: CopyGuard,
                      *, plain: bool = False) -> None:
        responder = self._responder
        respond = functools.partial(responder.reply, plain=True) if plain else responder.reply

        def reply(*args: Any) -> Iterator[str]:
            self.timeline.stamp(LLM_START)  # on the LLM worker: its queue is behind us
            self.passes += 1
            return respond(*args)

        worker = self.models.light_worker if self.light else self.models.llm_worker
        assert worker is not None
        stream = worker.stream(
            reply, history, self.transcript, draft, priority=self.priority, gate=self._llm_gate,
        )
        first_token: float | None = None
        # A tool-calling LLM may answer with a call to a skill: held until it is clear.
        # (Told not to call, a small model may still write one: held then too, never said.)
        tools = self.answer_skill is not None and _uses_tools(responder)
        transcript = self.transcript or ""
        call = "" if tools else None
        async with contextlib.aclosing(stream):
            async for piece in stream:
                first_token = first_token or now()
                if self.under_load is not None:
                    self.under_load.first_token()
                self.llm_seconds = now() - first_token
                self.tokens += 1
                if call is not None:
                    call += piece
                    if may_be_call(call):
                        if refused(call, transcript):
                            break  # it names a tool the words cannot support: stop it now
                        continue
                    piece, call = without_markers(call), None
                released = guard.feed(piece)
                if guard.copied is not None:
                    return
                if released and self._say_llm(released):
                    return  # the spoken-length budget is spent, or a false claim: stop
        if call and plain:
            log.info("a call-shaped reply when told not to call (%r): not said", call[:80])
            self._say(NOT_CAUGHT)
        elif call and not self._call_skill(call):
            # A call the user's words do not support: answer in words instead.
            await self._stream(history, None, guard, plain=True)
        elif released := guard.finish():
            self._say_llm(released)

    def _say_llm(self, text: str) -> bool:
        """The LLM's words, unless they claim a timer or list action, which no skill did, or
        say the date or time, which the LLM cannot know (pipeline.answer.claims): then one
        honest sentence, or the clock's answer, instead. True: stop the LLM."""
        assert self.transcript is not None
        so_far = self.text + text
        asked = clock_claim(so_far)
        clock = self.answer_skill(asked) if asked and self.answer_skill is not None else None
        if clock is not None:
            log.info("the LLM said the date or time (%r): the clock answers", so_far[-80:])
            instead = clock.text
        elif claims_action(so_far, self.transcript):
            log.info("the LLM claimed an action no skill did (%r): not said", so_far[-80:])
            instead = NOT_DONE
        else:
            return self._say(text)
        self._telling.drop()
        self._say(instead)
        return True

    def _say(self, text: str) -> bool:
        """Words of the reply, said; True once its budget is spent."""
        self.timeline.stamp(TTFT)
        self.text += text
        self._show(ReplyDelta(text))
        return self._telling.say(text, self._budget())

    def _call_skill(self, call: str) -> bool:
        """The LLM called a tool: the skill answers the request the call stands for.
        False when the call is not believed (or no skill answers it)."""
        assert self.answer_skill is not None and self.transcript is not None
        request = request_for(call, self.transcript)
        skill = self.answer_skill(request) if request is not None else None
        log.info("tool call %r → %r → %s", call.strip()[:80], request, skill and skill.skill)
        if skill is None:
            return False
        self.skill = skill
        self._act()
        self._say(skill.text)
        return True

    def _budget(self) -> Budget:
        """An LLM reply: one sentence, or two short ones (tighter under load); a skill's:
        whole, up to the spoken-length cap."""
        sentences, words = self._sentence_budget, self.integrity.max_words
        if self.skill is not None:
            return Budget(sentences, words)
        assert self.transcript is not None
        words = word_budget(self.transcript, self.integrity)
        if self.under_load is not None:  # a short reply's caps
            sentences, words = self.under_load.caps(sentences, words)
        return Budget(sentences, words, drops_offers=True)

    def _on_clause(self, clause: Clause) -> None:
        if not self.timeline.has(FIRST_CLAUSE) and self.spoken:
            self._llm_gate.close()  # first audio first: the LLM waits for clause 1's
            self._llm_gate.end_lockstep()
        self.timeline.stamp(FIRST_CLAUSE)
        self._clause_ready.set()


def _uses_tools(responder: Responder) -> bool:
    return isinstance(responder, TakesTools) and responder.tools
