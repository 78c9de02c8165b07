"""One conversation: the user's audio frames in, the assistant's audio frames out.

    frame ─► Endpointer ─► SilenceOnset ─► Reply (speculative: ASR → LLM → TTS into a buffer)
                        ├► SpeechResumed ─► cancel the speculative reply, count the waste
                        ├► Endpoint ─────► commit it: its audio goes to the Speaker now
                        └► speech over the assistant ─► hold, barge-in, or its words
                                                          decide (pipeline.turn.talk_over)

The transport pops the Speaker's frames at its own pace. History keeps what was heard.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from datetime import datetime
from typing import Any

import numpy as np

from pipeline.answer.caches import ReplyCache
from pipeline.answer.heard import cut_last_reply, stamp_heard
from pipeline.answer.integrity import prompt_history
from pipeline.answer.llm import Message
from pipeline.answer.model_calls import Models
from pipeline.answer.reply import Reply
from pipeline.answer.under_load import UnderLoad
from pipeline.bell import Bell
from pipeline.compute.degrade import LlmUse, LoadBoard
from pipeline.compute.stats import EngineStats, SpeculationStats
from pipeline.conversation_events import BargeIn, Emit, Error, Turn, UserSpeaking
from pipeline.conversation_options import ConversationOptions, TransportNeeds
from pipeline.events import (
    FRAME_SAMPLES,
    AudioFrame,
    Endpoint,
    SilenceOnset,
    SpeechResumed,
    SpeechStarted,
)
from pipeline.listen.endpointing import endpoint_silence_ms
from pipeline.listen.vad import Endpointer
from pipeline.room import Room
from pipeline.skills import LastResult, SkillContext, SkillReply, Skills, Timers
from pipeline.speaker import Speaker
from pipeline.timeline import ENDPOINT, SPEECH_END, Timeline, now
from pipeline.turn.captions import Captions
from pipeline.turn.rehearing import Rehearing
from pipeline.turn.talk_over import TalkOver
from pipeline.turn.turn_record import last_reply, record

log = logging.getLogger(__name__)


class Conversation:
    def __init__(
        self,
        models: Models,
        speaker: Speaker,
        options: ConversationOptions | None = None,
        emit: Emit | None = None,
        on_turn: Callable[[Turn], None] | None = None,
        stats: EngineStats | None = None,
        reply_cache: ReplyCache | None = None,
        skills: Skills | None = None,
        timers: Timers | None = None,
        room: Room | None = None,
        needs: TransportNeeds | None = None,
        load: LoadBoard | None = None,
    ) -> None:
        needs = needs or TransportNeeds()
        self.load = load  # every conversation's LLM use: the engine's degradation policy
        self.models = models
        self.speaker = speaker
        self.options = options or ConversationOptions()
        self.room = room
        """This stream's room gate (`room.conditioning`: the transport's flag); None:
        webrtcvad alone (scripted audio in tests)."""
        self.endpointer = Endpointer(self.options.vad, needs.classify, room=room)
        self._on_vad = needs.on_vad
        if room is not None:
            speaker.played = room.played  # the echo reference: what the room hears
        self.emit: Emit = emit or (lambda _event: None)
        self.on_turn = on_turn
        self.history: list[Message] = []
        self.last_result: LastResult | None = None
        """What the last finished turn answered: a follow-up's referent ("add five to
        that"). Set only in `_finish`, so a speculation the user talked on from leaves it."""
        self.turns: list[Turn] = []
        self.speculation = SpeculationStats()
        self.stats = stats or EngineStats()
        self.reply_cache = reply_cache
        self._respeculated: str | None = None
        """The reply text of the last speculation the user talked over (a draft)."""
        self.barge_ins = 0
        self._reply: Reply | None = None
        self._task: asyncio.Task[None] | None = None
        self.captions = Captions(self)
        self._group: asyncio.TaskGroup | None = None
        self._prefill: asyncio.Task[None] | None = None
        self.rehearing = Rehearing(self)
        self.talk_over = TalkOver(self)
        self.skills = skills
        self.bell = Bell(timers, speaker, self._say, self.emit) if timers is not None else None
        self._spoken = needs.spoken

    def speak_replies(self, spoken: bool) -> None:
        """Whether replies are spoken (the default) or text only: no TTS job, no audio —
        for a client that asked for text (Realtime's output_modalities ["text"], Wyoming's
        handle). From the next reply on."""
        self._spoken = spoken

    @property
    def busy(self) -> bool:
        """True while a reply is being prepared or played."""
        return self._task is not None and not self._task.done()

    @property
    def user_speaking(self) -> bool:
        return self.endpointer.speaking

    async def run(self, frames: AsyncIterator[AudioFrame]) -> None:
        """Consume the user's frames until they end. Cancel-safe: all reply work stops."""
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                bell = group.create_task(self.bell.run()) if self.bell is not None else None
                async for frame in frames:
                    self.push(frame)
                self._cancel_reply(reason="input ended")
                if bell is not None:
                    bell.cancel()
        finally:
            self._group = None
            self._cancel_reply(reason="conversation closed")

    def push(self, frame: AudioFrame) -> None:
        """Advance on one 20 ms frame of the user's audio (cheap: webrtcvad only)."""
        self.endpointer.endpoint_ms = self.endpoint_ms
        events = self.endpointer.push(frame)
        if events and self._on_vad is not None:
            self._on_vad(events)  # the transport sees them before they are acted on
        for event in events:
            if isinstance(event, SpeechStarted):
                log.debug("speech started")
                self.talk_over.speech_started()
                self.captions.speech_started()
                self.emit(UserSpeaking())
            elif isinstance(event, SilenceOnset) and self.options.speculate:
                self.captions.stop()
                if self.talk_over.paused(event):
                    pass  # a turn over the reply: its words decide (pipeline.turn.talk_over)
                elif event.again:
                    self.rehearing.start(event)
                else:
                    self._start_reply(event.audio, event.speech_end, speculative=True)
            elif isinstance(event, SpeechResumed):
                self.talk_over.resumed()
                self.cancel_speculation()
            elif isinstance(event, Endpoint):
                self.on_endpoint(event)
        if (unheard := self.endpointer.take_unheard()) is not None and self.busy:
            self.talk_over.ended(unheard, self._reply)  # a word over the reply?
        self.talk_over.check()
        self.captions.maybe_start()

    def start_turn(self, *, audio: Any = None, text: str | None = None) -> bool:
        """Reply now to `audio` (transcribed as usual) or to `text` (taken as the
        transcript), as the endpoint would: committed, on the history — for a client that
        ends the turn itself (Realtime's commit, Wyoming's transcript). False when a reply
        is already being prepared or played, or the conversation is not running."""
        if audio is None and text is None:
            raise ValueError("start_turn needs audio or text")
        if self.busy or self._group is None:
            return False
        self._start_reply(np.zeros(FRAME_SAMPLES, np.int16) if audio is None else audio, now(),
                          speculative=False, text=text)
        if self._reply is None:
            return False
        self._reply.timeline.stamp(ENDPOINT)
        return True

    def interrupt(self, *, reason: str = "client cancelled") -> bool:
        """Stop the committed reply now, as a barge-in does: queued audio dropped, model
        work cancelled, the turn recorded as interrupted with what was heard. False when
        there is none (a speculative reply is not the client's to cancel)."""
        reply = self._reply
        if reply is None or reply.speculative or not self.busy:
            return False
        self.barge_in(reply, reason)
        return True

    # --- the turn port (pipeline.turn.turn_port): what talk_over, rehearing, captions use ---

    @property
    def in_flight(self) -> Reply | None:
        return self._reply

    def llm_use(self) -> LlmUse | None:
        """How its reply uses the LLM now (pipeline.compute.degrade.LlmUser)."""
        reply = self._reply
        if reply is None or reply.under_load is None or not self.busy:
            return None
        return reply.under_load.use(confirmed=not reply.speculative)

    def models_now(self) -> Models:
        return self.models.for_room(self.room is not None and self.room.noisy_ear(now()))

    def spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
        if self._group is None:
            work.close()
            return None
        return self._group.create_task(work)

    @property
    def reply_held(self) -> bool:
        return self.speaker.held

    def hold_reply(self) -> None:
        self.speaker.hold()
        self.stats.holds += 1

    def release_reply(self) -> None:
        self.speaker.release()
        self.stats.holds_released += 1

    def truncate_last_reply(self, text: str, share: float) -> None:
        """The client played only `share` of the last reply (`text`): the history keeps
        that much of it, marked interrupted (Realtime's conversation.item.truncate)."""
        self.history = cut_last_reply(self.history, text, share)

    def speculating(self) -> Reply | None:
        """The speculative reply being prepared, if any."""
        reply = self._reply
        return reply if reply is not None and reply.speculative and self.busy else None

    def speculate(self, onset: SilenceOnset, *, text: str | None = None) -> None:
        """A speculative reply to the turn so far (`text`: its words, already heard)."""
        self._start_reply(onset.audio, onset.speech_end, speculative=True, text=text)

    def on_endpoint(self, event: Endpoint) -> None:
        """The user's turn is over: commit the speculation, or reply to the whole turn."""
        if self.rehearing.hold(event):
            return  # it is being heard again: acted on once the words are known
        reply = self._reply
        if reply is not None and reply.speculative and self.busy and event.voice_after_onset:
            # Words came after the onset its transcript was made at: hear the whole turn.
            self.cancel_speculation(reason="voice after its silence onset")
            reply = None
        if reply is not None and reply.speculative and self.busy:
            reply.timeline.stamp(ENDPOINT, event.t)
            reply.commit()
            for stats in self.speculation_stats():
                stats.committed += 1
            return
        if self.busy:
            self.talk_over.ended(event, reply)  # a word over the reply?
            return
        self._start_reply(event.audio, event.speech_end, speculative=False)
        if self._reply is not None:
            self._reply.timeline.stamp(ENDPOINT, event.t)

    def _start_reply(self, audio: Any, speech_end: float, *, speculative: bool,
                     text: str | None = None) -> None:
        if self.busy or self._group is None:
            return
        timeline = Timeline(turn=len(self.turns) + 1)
        timeline.stamp(SPEECH_END, speech_end)
        # Typed words are the transcript: the reply never waits on the ASR worker.
        models = self.models if text is not None else self.models_now()
        if text is None and models.ear is not None and models.ear is models.noisy_ear:
            self.stats.noisy_ear_replies += 1
        reply = Reply(models, self.speaker, list(self.history), audio, timeline,
                      self.emit, speculative=speculative, transcript=text, spoken=self._spoken,
                      find_draft=self._draft, clause_options=self.options.clauses,
                      integrity=self.options.integrity,
                      answer_skill=self._answer_skill if self.skills is not None else None,
                      on_action=self._acted, early_verdict=self.options.early_verdict,
                      rehear_below=(endpoint.done_logprob if self.options.hear_unsure
                                    and (endpoint := self.options.endpoint) else None),
                      under_load=UnderLoad(self.load, self) if self.load is not None else None)
        if speculative:
            for stats in self.speculation_stats():
                stats.started += 1
        else:
            reply.commit()
        self._reply = reply
        self._task = self._group.create_task(self._run_reply(reply))

    async def _run_reply(self, reply: Reply) -> None:
        try:
            await reply.run()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # one failed turn must not end the conversation
            log.exception("reply failed")
            self._respeculated = None  # nor hand its draft to the next reply
            self.emit(Error(f"reply failed: {error}"))
            self.speaker.clear()
            return
        if reply.transcript:
            self._finish(reply, interrupted=False)

    def _answer_skill(self, transcript: str) -> SkillReply | None:
        assert self.skills is not None
        context = SkillContext(now=datetime.now().astimezone(), monotonic=now(),
                               owner=self.options.owner, transcript=transcript,
                               previous=last_reply(self.history), last=self.last_result,
                               earlier=tuple(m.content for m in self.history
                                             if m.role == "assistant" and m.content))
        return self.skills.answer(transcript, context)

    def _acted(self, skill: SkillReply) -> None:
        if skill.skill == "timer" and self.bell is not None:
            self.bell.changed()

    async def _say(self, text: str) -> Any:
        """A timer's spoken line (none when replies are text only: the ring is shown,
        TimerFired carries its words)."""
        return await self.models.say(text) if self._spoken else np.zeros(0, np.int16)

    def _cache_key(self, history: list[Message], transcript: str) -> str:
        responder = self.models.responder
        return ReplyCache.key(responder.model_id, responder.system_prompt, history, transcript)

    def _draft(self, transcript: str) -> str | None:
        """What we expect the reply to be: a verified reply to the same words in the same
        state, else the reply speculated before the user went on talking."""
        if self.reply_cache is not None:
            cached = self.reply_cache.get(self._cache_key(self.history, transcript))
            if cached is not None:
                return cached
        return self._respeculated

    @property
    def endpoint_ms(self) -> int:
        """How long the silence must last to end the turn: the speculative reply's
        transcript, and the turn detector's verdict on it once that is in, decide."""
        reply, default = self._reply, self.options.vad.endpoint_ms
        if (self.options.endpoint is None or reply is None or not reply.speculative
                or reply.transcript is None):
            return default
        skill = reply.skill
        return endpoint_silence_ms(reply.transcript, default, self.options.endpoint,
                                   done_logprob=reply.done_logprob,
                                   verdict_pending=reply.judging,
                                   request_complete=skill is not None and skill.whole_request)

    def llm_history(self) -> list[Message]:
        """What the next reply's LLM will read of the history (pipeline.answer.integrity): idle
        reading ahead must read exactly that, or the reply re-reads it all."""
        return prompt_history(self.history, self.options.integrity)

    def speculation_stats(self) -> tuple[SpeculationStats, ...]:
        return (self.speculation, self.stats.speculation)

    def heard_at(self, t: float) -> Turn | None:
        """The page heard reply audio start at `t` (server clock): TTFA (browser). A
        recorded turn that took the stamp is returned (pipeline.answer.heard.stamp_heard)."""
        return stamp_heard(self._reply.timeline if self._reply is not None else None,
                           self.turns, t)

    def cancel_speculation(self, reason: str = "user resumed") -> None:
        reply = self._reply
        if reply is None or not reply.speculative or not self.busy:
            return
        if reply.text:
            self._respeculated = reply.text
        for stats in self.speculation_stats():
            stats.cancelled += 1
            stats.wasted_tokens += reply.tokens
            stats.wasted_ms += (now() - reply.started) * 1000
        self._cancel_reply(reason=reason)

    def barge_in(self, reply: Reply, reason: str) -> None:
        self.barge_ins += 1
        self.stats.barge_ins += 1
        dropped = self.speaker.clear()
        self._cancel_reply(reason=f"barge-in ({reason})")
        self.emit(BargeIn(dropped_ms=dropped * 20, reason=reason))
        if reply.transcript:
            self._finish(reply, interrupted=True)

    def _cancel_reply(self, *, reason: str) -> None:
        self.rehearing.stop()
        self.talk_over.stop()
        self.speaker.release()
        if self._task is not None and not self._task.done():
            log.debug("cancelling reply: %s", reason)
            self._task.cancel()
        self._task = None
        self._reply = None

    def _finish(self, reply: Reply, *, interrupted: bool) -> None:
        done = record(reply, self.history, len(self.turns) + 1, interrupted=interrupted)
        self._respeculated = None
        if (self.reply_cache is not None and not done.left_out and reply.transcript
                and reply.skill is None and not reply.light):  # the shared LLM's own only
            self.reply_cache.put(self._cache_key(self.history, reply.transcript), reply.text)
        self.history += done.messages
        if done.referent_changed:  # else the referent stands: asked again
            self.last_result = done.result
        if self._group is not None:  # read the next prompt's start while the user is silent
            light = self.load is not None and self.load.light and self.load.others(self) > 0
            self._prefill = self._group.create_task(
                self.models.prefill_next(self.llm_history(), light=light))
        self.turns.append(done.turn)
        self.stats.turns += 1
        self.stats.heard_again += done.turn.first_heard is not None
        for kind in done.turn.degraded:
            self.stats.degraded[kind] = self.stats.degraded.get(kind, 0) + 1
        self.stats.llm_tokens += reply.tokens
        self.stats.llm_seconds += reply.llm_seconds
        self.emit(done.turn)
        if self.on_turn is not None:
            self.on_turn(done.turn)
        if self._reply is reply:
            self._reply = None
