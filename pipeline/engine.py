"""The engine: models loaded once per process, a conversation opened per user.

ASR, TTS and the turn detector are shared by all conversations (one worker thread each).
The LLM is shared too (models/shared_llm.py: one context, a sequence per conversation,
batched decoding that takes the CPU lock itself), or, with `--no-shared-llm`, every
conversation gets a llama context of its own.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from pipeline.answer.caches import CachedSynthesizer, ReplyCache
from pipeline.answer.llm import Responder
from pipeline.answer.model_calls import Models
from pipeline.answer.tts import Synthesizer
from pipeline.compute.degrade import LoadBoard
from pipeline.compute.stats import EngineStats
from pipeline.compute.workers import CpuLock, ModelWorker, Priority
from pipeline.conversation import Conversation
from pipeline.conversation_events import Emit, Turn
from pipeline.conversation_options import ConversationOptions, TransportNeeds
from pipeline.events import SAMPLE_RATE
from pipeline.listen.asr import Transcriber
from pipeline.listen.ear import Ear
from pipeline.listen.turn_detector import TurnDetector
from pipeline.room import Room, Stream
from pipeline.skills import Skill, Timers, default_skills
from pipeline.skills.intents import Recognizer
from pipeline.skills.lists import ListStore
from pipeline.skills.timer_store import TimerKeeper
from pipeline.speaker import Speaker
from pipeline.timeline import now

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClosableResponder:
    responder: Responder
    close: Callable[[], None]


@dataclass(frozen=True)
class LightTier:
    """A smaller LLM beside the shared one, for confirmed replies under load
    (pipeline.compute.degrade, `light-tier`): a responder per conversation, and the
    model's close. It schedules its own CPU, as the shared LLM does."""

    open: Callable[[], ClosableResponder]
    close: Callable[[], None]


class Engine:
    """Shared models and workers. Create once; `open()` a conversation per user."""

    def __init__(
        self,
        transcriber: Transcriber,
        synthesizer: Synthesizer,
        open_responder: Callable[[], ClosableResponder],
        options: ConversationOptions | None = None,
        *,
        tts_cache: bool = True,
        reply_cache: bool = True,
        detector: TurnDetector | None = None,
        close_detector: Callable[[], None] | None = None,
        share_cpu: bool = True,
        skills: Sequence[Skill] | None = None,
        store: ListStore | None = None,
        make_room: Callable[[Stream], Room] | None = None,
        cpu: CpuLock | None = None,
        shared_llm: Callable[[], None] | None = None,
        llm_memory: Callable[[], dict[str, object]] | None = None,
        noisy_transcriber: Transcriber | None = None,
        recognizer: Recognizer | None = None,
        timer_keeper: TimerKeeper | None = None,
        light: LightTier | None = None,
    ) -> None:
        self.options = options or ConversationOptions()
        self.stats = EngineStats()
        self.load = LoadBoard(self.options.degrade)
        self.light = light
        self.load.light = light is not None
        """Every open conversation's LLM use: what a turn gives up under load."""
        self.transcriber = transcriber
        self.synthesizer: Synthesizer = (
            CachedSynthesizer(synthesizer, stats=self.stats.tts_cache) if tts_cache else synthesizer
        )
        self.reply_cache = ReplyCache(stats=self.stats.reply_cache) if reply_cache else None
        self.open_responder = open_responder
        # One model computes at a time, across all conversations (pipeline.compute.workers).
        self.cpu = cpu or (CpuLock() if share_cpu else None)
        self._close_llm = shared_llm
        self.llm_memory = llm_memory
        """The shared LLM's KV: reserved, and held per conversation (None: not shared)."""
        """Closes the LLM every conversation shares; it schedules its own CPU, so the
        conversations' LLM workers only wait for it."""
        self.asr_worker = ModelWorker("asr", self.cpu)
        self.ear = Ear(transcriber, self.asr_worker, stats=self.stats)
        """Every conversation's transcription: jobs due together go as one batch."""
        self.noisy_ear = (Ear(noisy_transcriber, self.asr_worker, stats=self.stats)
                          if noisy_transcriber is not None else None)
        """The noisy-room ear (a sturdier Whisper) for streams whose room is noisy."""
        self.tts_worker = ModelWorker("tts", self.cpu)
        self.detector = detector
        self.detector_worker = ModelWorker("turn", self.cpu) if detector is not None else None
        self._close_detector = close_detector
        self.skills = skills
        """Stateless skills shared by every conversation (None: no skills at all); each
        conversation adds its own timers and the shared list store."""
        self.store = store
        self.recognizer = recognizer
        self.timer_keeper = timer_keeper
        """Where timers are written down so that a restart loses none (None: memory only)."""
        """Home Assistant's intents, asked before the phrase-matching skills (None: those alone)."""
        self.make_room = make_room
        """Each conversation's room gate with its models (None: the pure gate alone)."""

    async def warm(self) -> None:
        """Exercise ASR and TTS once so that no user pays for first-call set-up."""
        noise = (np.random.default_rng(0).standard_normal(SAMPLE_RATE) * 300).astype(np.int16)
        await self.ear.transcribe(noise, priority=Priority.BACKGROUND)
        if self.noisy_ear is not None:
            await self.noisy_ear.transcribe(noise, priority=Priority.BACKGROUND)
        await self.tts_worker.run(
            lambda: list(self.synthesizer.synthesize("Hello there.")), priority=Priority.BACKGROUND
        )
        if self.detector is not None and self.detector_worker is not None:
            await self.detector_worker.run(self.detector.done_logprob, "Hello there.",
                                           priority=Priority.BACKGROUND)

    @contextlib.asynccontextmanager
    async def open(
        self, speaker: Speaker, emit: Emit | None = None,
        on_turn: Callable[[Turn], None] | None = None, stream: Stream | None = None,
        keep_timers: bool = True, needs: TransportNeeds | None = None,
    ) -> AsyncIterator[Conversation]:
        """A conversation with its own llama context, warmed; closed on exit. `stream`:
        what the transport knows of its microphone audio (the room gate's per-stream
        settings; default: raw audio from a session opened before anyone speaks).
        `keep_timers`: its timers are written down (`timer_keeper`) and it takes over the
        owner's timers no live conversation rings (False: a way in that cannot ring).
        `needs`: what the way in needs of it (pipeline.conversation_options.TransportNeeds)."""
        needs = needs or TransportNeeds()
        llm_worker = ModelWorker("llm", None if self._close_llm else self.cpu)
        light_worker = ModelWorker("llm-light", None) if self.light is not None else None
        opened: ClosableResponder | None = None
        light: ClosableResponder | None = None
        room: Room | None = None
        conversation: Conversation | None = None
        holder = uuid.uuid4().hex if keep_timers and self.timer_keeper is not None else None
        try:
            # Background priority: a new user's set-up never delays someone's reply.
            opened = await llm_worker.run(self.open_responder, priority=Priority.BACKGROUND)
            await llm_worker.run(opened.responder.warm, [], priority=Priority.BACKGROUND)
            if self.light is not None and light_worker is not None:
                light = await light_worker.run(self.light.open, priority=Priority.BACKGROUND)
                await light_worker.run(light.responder.warm, [], priority=Priority.BACKGROUND)
            models = Models(self.transcriber, self.asr_worker, opened.responder, llm_worker,
                            self.synthesizer, self.tts_worker, self.detector,
                            self.detector_worker, ear=self.ear, noisy_ear=self.noisy_ear,
                            light_responder=light.responder if light is not None else None,
                            light_worker=light_worker)
            timers = self._timers(holder, needs.rings) if self.skills is not None else None
            skills = (default_skills(timers=timers, store=self.store, extra=self.skills,
                                     recognizer=self.recognizer)
                      if timers is not None and self.skills is not None else None)
            room = self.room(stream or Stream())
            conversation = Conversation(
                models, speaker, self.options, emit=emit, on_turn=on_turn, stats=self.stats,
                reply_cache=self.reply_cache, skills=skills, timers=timers, room=room,
                needs=needs, load=self.load)
            self.load.join(conversation)
            yield conversation
        finally:
            if conversation is not None:
                self.load.leave(conversation)
            # No await here: this cleanup must complete even if cancelled again.
            if room is not None:
                room.close()
            if holder is not None and self.timer_keeper is not None:
                self.timer_keeper.release(holder)
            llm_worker.close(opened.close if opened is not None else None, wait=0)
            if light_worker is not None:
                light_worker.close(light.close if light is not None else None, wait=0)

    def _timers(self, holder: str | None, rings: bool) -> Timers:
        """A conversation's timers: with the owner's written-down ones when `holder`."""
        if holder is None or self.timer_keeper is None:
            return Timers(rings=rings)
        owner = self.options.owner
        timers = Timers(journal=self.timer_keeper.bound(owner, holder), rings=rings)
        timers.restore(self.timer_keeper.adopt(owner, holder, monotonic=now(),
                                               wall=datetime.now().astimezone()))
        return timers

    def room(self, stream: Stream) -> Room | None:
        """A fresh room gate for one stream (None: the engine has none)."""
        return self.make_room(stream) if self.make_room is not None else None

    def clear_caches(self) -> None:
        """A setting that changes answers or voices changed: forget cached replies/audio."""
        if self.reply_cache is not None:
            self.reply_cache.clear()
        if isinstance(self.synthesizer, CachedSynthesizer):
            self.synthesizer.clear()

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        if self.timer_keeper is not None:
            self.timer_keeper.close()
        self.asr_worker.close()
        self.tts_worker.close()
        if self.detector_worker is not None:
            self.detector_worker.close(self._close_detector)
        if self._close_llm is not None:
            self._close_llm()
        if self.light is not None:
            self.light.close()
