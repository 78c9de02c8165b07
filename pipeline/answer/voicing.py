"""A reply's voice: its clauses made into audio as they are written, and played.

The reply (pipeline.answer.reply) writes clauses into a queue; this side makes each one's
audio on the TTS worker once the turn detector has answered, holds it until the turn is
committed (a speculation the user talks on from is never heard), and pushes it to the
speaker. It knows what the user heard: the clauses made and played so far.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from pipeline.answer.heard import Spoken, heard_words
from pipeline.answer.model_calls import Models
from pipeline.answer.under_load import UnderLoad
from pipeline.compute.gate import Gate
from pipeline.compute.workers import Priority
from pipeline.events import SAMPLE_RATE, Clause
from pipeline.speaker import Speaker
from pipeline.timeline import TTFA_SERVER, TTUA, Timeline


@dataclass
class Voicing:
    models: Models
    speaker: Speaker
    timeline: Timeline
    committed: asyncio.Event
    """The turn is over: audio may be pushed to the speaker."""
    verdict_in: asyncio.Event
    """The turn detector has answered (or is not asked): audio may be made."""
    llm_gate: Gate
    """Opened once a clause's audio is coming: the LLM steps aside for clause 1's."""
    priority: Callable[[], Priority]
    """The TTS job's priority, asked per clause (a skill's speech goes first under load)."""
    spoken: bool = True
    """False: text only; each clause counts as heard once it is written."""
    under_load: UnderLoad | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    """Every clause is made and played out."""
    parts: list[Spoken] = field(default_factory=list)
    _generated_all: bool = False
    _sentence_sent: bool = False

    @property
    def played_text(self) -> str:
        """What the user actually heard: whole clauses, then the heard share of the next."""
        return " ".join(heard_words(self.parts))

    @property
    def audio_s(self) -> float:
        """Seconds of reply audio made (all of it, heard or not)."""
        return sum(s.samples for s in self.parts) / SAMPLE_RATE

    @property
    def played_s(self) -> float:
        return sum(s.played for s in self.parts) / SAMPLE_RATE

    async def speak(self, clauses: asyncio.Queue[Clause | None]) -> None:
        """Each clause of `clauses` (None ends them) made into audio and played."""
        if not self.spoken:
            await self._write(clauses)
            return
        while (clause := await clauses.get()) is not None:
            await self.verdict_in.wait()
            spoken = Spoken(clause)
            self.parts.append(spoken)
            stream = self.models.tts_worker.stream(
                self.models.synthesizer.synthesize, clause.text, priority=self.priority()
            )
            async with contextlib.aclosing(stream):
                async for pcm in stream:
                    self.llm_gate.open()
                    await self.committed.wait()
                    if self.under_load is not None:
                        self.under_load.audio_started()
                    spoken.samples += len(pcm)
                    self.speaker.push(pcm, self._on_played(spoken))
            spoken.done = True
            self.llm_gate.open()
            if clause.ends_sentence:
                self._sentence_sent = True
                self._stamp_ttua()
        if self.under_load is not None:
            self.under_load.audio_started()  # lets one_moment end
        self._generated_all = True
        self._check_finished()

    async def _write(self, clauses: asyncio.Queue[Clause | None]) -> None:
        """A text-only reply: every clause is shown as it is written, so it is what was
        "heard" (an interruption keeps the clauses written by then)."""
        while (clause := await clauses.get()) is not None:
            self.parts.append(Spoken(clause, done=True))
        self._generated_all = True
        self._check_finished()

    def _on_played(self, spoken: Spoken) -> Callable[[int], None]:
        def played(samples: int) -> None:
            self.timeline.stamp(TTFA_SERVER)
            self._stamp_ttua()
            spoken.played += samples
            self._check_finished()

        return played

    def _stamp_ttua(self) -> None:
        # A usable answer: a whole sentence handed to the transport, and playback begun.
        if self._sentence_sent and self.timeline.has(TTFA_SERVER):
            self.timeline.stamp(TTUA)

    def _check_finished(self) -> None:
        if self._generated_all and all(s.played >= s.samples for s in self.parts):
            self.finished.set()
