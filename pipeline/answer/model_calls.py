"""The model calls a reply needs, each with the worker that runs it: the seams
(pipeline.listen.asr, pipeline.answer.llm, pipeline.answer.tts,
pipeline.listen.turn_detector) one conversation uses."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

import numpy as np

from pipeline.answer.llm import Message, Responder
from pipeline.answer.tts import Synthesizer
from pipeline.compute.workers import ModelWorker, Priority
from pipeline.events import Pcm
from pipeline.listen.asr import Transcriber
from pipeline.listen.ear import Ear
from pipeline.listen.turn_detector import TurnDetector

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Models:
    """The model calls a reply needs, each with the worker that runs it."""

    transcriber: Transcriber
    asr_worker: ModelWorker
    responder: Responder
    llm_worker: ModelWorker
    synthesizer: Synthesizer
    tts_worker: ModelWorker
    detector: TurnDetector | None = None
    detector_worker: ModelWorker | None = None
    ear: Ear | None = None
    """Transcription on `asr_worker`, shared by every conversation of an engine so that
    jobs due together go as one batch (pipeline/listen/ear.py); None: one of these models' own."""
    noisy_ear: Ear | None = None
    """A sturdier (slower) transcription for noisy rooms, on the same worker (None: none).
    In a quiet room it is the second ear (`second_ear`)."""
    light_responder: Responder | None = None
    """The light tier: a smaller LLM a confirmed reply may use under load
    (pipeline.compute.degrade, `light-tier`); None: none."""
    light_worker: ModelWorker | None = None

    def __post_init__(self) -> None:
        if self.ear is None:
            object.__setattr__(self, "ear", Ear(self.transcriber, self.asr_worker))

    def for_room(self, noisy: bool) -> Models:
        """These models, hearing with the noisy-room ear when `noisy` and there is one."""
        if not noisy or self.noisy_ear is None or self.noisy_ear is self.ear:
            return self
        return dataclasses.replace(self, ear=self.noisy_ear)

    @property
    def second_ear(self) -> Ear | None:
        """The sturdier ear where these models hear with another one: it hears again a
        turn that named a skill's thing but that no skill took
        (pipeline.answer.second_hearing). None: none, or it heard the turn already."""
        if self.noisy_ear is None or self.noisy_ear is self.ear:
            return None
        return self.noisy_ear

    async def hear(self, pcm: Pcm, priority: Priority, *, vocabulary: str | None = None) -> str:
        """`pcm`'s transcript, from the ASR worker (biased toward `vocabulary`, if given)."""
        assert self.ear is not None
        return await self.ear.transcribe(pcm, priority=priority, vocabulary=vocabulary)

    async def say(self, text: str) -> Pcm:
        """`text` in the reply voice, as one piece of audio (a timer's spoken line)."""
        synthesizer = self.synthesizer
        chunks = await self.tts_worker.run(lambda: list(synthesizer.synthesize(text)),
                                           priority=Priority.CONFIRMED)
        return np.concatenate(chunks) if chunks else np.zeros(0, np.int16)

    async def prefill_next(self, history: list[Message], *, light: bool = False) -> None:
        """Read the next prompt's start while the user is silent. Idle work: a failure
        here must not end the conversation (it runs in its task group)."""
        try:
            await self.llm_worker.run(self.responder.prefill, history,
                                      priority=Priority.BACKGROUND)
            if light and self.light_responder is not None and self.light_worker is not None:
                # `light`: the light tier too (other conversations are open, so it may be
                # asked): then it reads only the question, not the whole history (~1 s on
                # 2 busy cores). Alone it is never asked: no CPU is spent on it.
                await self.light_worker.run(self.light_responder.prefill, history,
                                            priority=Priority.BACKGROUND)
        except Exception:
            log.exception("prefill failed")
