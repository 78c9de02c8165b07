"""Hearing a turn again when voice came in its pause without resuming it.

A soft last word the room gate doubted ("… on my list *now*") or a burst of the room's own
talk keeps a pause going without resuming the turn, and the transcript made at the pause's
silence onset may lack a word. When that voice stops, the endpointer raises the onset again
(`SilenceOnset.again`) and the turn is transcribed again at once, while the pause goes on:
the speculation stands if the words are the same (the voice was the room's), else a new
one starts from them. An endpoint that comes meanwhile waits for those words, so a turn is
never answered from the stale transcript nor transcribed a third time.

A collaborator of one Conversation (like pipeline.turn.captions), through its turn port
(pipeline.turn.turn_port).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from pipeline.compute.workers import Priority
from pipeline.events import Endpoint, SilenceOnset
from pipeline.listen.turn_detector import normalise

if TYPE_CHECKING:
    from pipeline.answer.reply import Reply
    from pipeline.turn.turn_port import TurnPort

log = logging.getLogger(__name__)
STALE = "voice after its silence onset"


class Rehearing:
    def __init__(self, conversation: TurnPort) -> None:
        self.conversation = conversation
        self._task: asyncio.Task[None] | None = None
        self._ended: Endpoint | None = None
        """The turn's endpoint, come while it was being heard again (acted on after)."""

    def start(self, onset: SilenceOnset) -> None:
        """Late voice in the pause stopped: hear the turn (`onset.audio`) again."""
        conv = self.conversation
        reply = conv.speculating()
        if reply is None or reply.transcript is None:
            # No speculation (yet), or its transcription is still to come: start afresh.
            conv.cancel_speculation(reason=STALE)
            conv.speculate(onset)
            return
        self.stop()
        self._task = conv.spawn(self._compare(reply, onset))
        if self._task is not None:
            for stats in conv.speculation_stats():
                stats.reheard += 1

    def hold(self, endpoint: Endpoint) -> bool:
        """The turn ended: True if it is being heard again (the endpoint is acted on
        once the words are known), False to act on it now."""
        if self._task is None:
            return False
        self._ended = endpoint
        return True

    def stop(self) -> None:
        self._ended = None
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _compare(self, reply: Reply, onset: SilenceOnset) -> None:
        conv = self.conversation
        try:
            # Confirmed priority: an endpoint may be waiting for these words (`hold`).
            text: str | None = await reply.models.hear(onset.audio, Priority.CONFIRMED)
        except asyncio.CancelledError:
            raise
        except Exception:  # hear it again in the reply itself
            log.exception("transcribing the turn again failed")
            text = None
        self._task = None
        ended, self._ended = self._ended, None
        if conv.speculating() is reply:
            # The first ear's words: a second ear may have put its own in their place.
            first = reply.first_heard or reply.transcript or ""
            same = text is not None and normalise(text) == normalise(first)
            log.info("late voice in the pause: heard again as %r (%s)", text,
                     "the same words" if same else f"was {reply.transcript!r}")
            if same:
                for stats in conv.speculation_stats():
                    stats.kept += 1
            else:
                conv.cancel_speculation(reason=STALE)
                conv.speculate(onset, text=text or None)
        if ended is not None:  # the turn ended meanwhile: now its words are known
            conv.on_endpoint(ended)
