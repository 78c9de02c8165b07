"""Live captions while the user speaks, and the LLM (and turn detector) reading their
settled words ahead, so that at silence onset only the rest of the turn is left.

Background work for one Conversation, through its turn port (pipeline.turn.turn_port): each
caption transcribes the utterance so far, at most every `partial_interval_s`, behind every
confirmed or speculative job; a failure costs only the head start.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from pipeline.compute.workers import Priority
from pipeline.conversation_events import Transcript

if TYPE_CHECKING:
    from pipeline.turn.turn_port import TurnPort

log = logging.getLogger(__name__)


class Captions:
    def __init__(self, conversation: TurnPort) -> None:
        self.conversation = conversation
        self._task: asyncio.Task[None] | None = None
        self._at = 0.0
        """Seconds into the utterance of the last caption."""

    def speech_started(self) -> None:
        self._at = 0.0

    def maybe_start(self) -> None:
        """A caption of the utterance so far, if one is due and none is running."""
        conv = self.conversation
        interval = conv.options.partial_interval_s
        endpointer = conv.endpointer
        if (
            interval is None
            or not endpointer.speaking
            or endpointer.pausing
            or (self._task is not None and not self._task.done())
            or endpointer.utterance_s - self._at < interval
        ):
            return
        self._at = endpointer.utterance_s
        self._task = conv.spawn(self._caption(endpointer.utterance()))

    def stop(self) -> None:
        """The speculative transcript supersedes the caption: a job waiting for the CPU
        is skipped."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def _caption(self, audio: Any) -> None:
        conv = self.conversation
        models = conv.models
        text = await models.hear(audio, Priority.BACKGROUND)
        if not text or not conv.endpointer.speaking:
            return
        conv.emit(Transcript(text, final=False))
        settled = " ".join(text.split()[:-1])  # the last word may be cut mid-way
        if conv.options.prefill_captions and settled and not conv.busy:
            await self._read_ahead(settled)

    async def _read_ahead(self, words: str) -> None:
        conv = self.conversation
        models = conv.models
        try:
            if models.detector is not None and models.detector_worker is not None:
                await models.detector_worker.run(models.detector.prefill, words,
                                                 priority=Priority.BACKGROUND)
            await models.llm_worker.run(models.responder.prefill, conv.llm_history(), words,
                                        priority=Priority.BACKGROUND)
        except Exception:
            log.exception("reading the caption ahead failed")
