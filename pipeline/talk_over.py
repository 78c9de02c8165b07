"""The user talking over a playing reply: hold it, interrupt it, or let it go on.

Per frame, the room gate's confirmed speech over a committed reply holds it at hold_ms
(nothing plays, nothing is dropped) and interrupts it at barge_in_ms (a cough is shorter).

A short word over the reply ("Wait.", "Stop.") is confirmed for only 140-180 ms: it held
the reply, the hold let go 200 ms into the pause after it, the reply played on, and the
word's turn was dropped as a sound made while the assistant talks. So a turn that held
the reply keeps it held until the turn ends and its words are heard: words interrupt the
reply and are answered as the user's turn; nothing (a cough: Whisper hears no speech) or
a listener's backchannel ("mm-hm", "yeah", "okay") let it go on from where it stopped —
as LiveKit Agents resumes a "false interruption" that brought no words.

A collaborator of one Conversation (like pipeline.rehearing).
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import TYPE_CHECKING

from pipeline.events import Endpoint
from pipeline.timeline import now
from pipeline.turn_detector import normalise
from pipeline.workers import Priority

if TYPE_CHECKING:
    from pipeline.conversation import Conversation
    from pipeline.reply import Reply

log = logging.getLogger("pipeline.conversation")

BACKCHANNEL = re.compile(
    r"^(?:(?:m+ ?h+m+|u+h+ ?h+u+h+|h+m+|m+|a+h+|o+h+|yeah|yep|yup|okay|ok|right|"
    r"alright|all right|i see|got it|cool|nice|wow|great|good|true|indeed|exactly|"
    r"really|uh|um)(?: |$))+$"
)
"""A listener's signal that they follow, which lets the reply go on: "mm-hm", "yeah,
yeah", "okay", "I see". Anything with other words interrupts ("yeah, but…", "wait"), and
so do "yes" and "sure": the answer to a question the reply asked."""


def is_backchannel(words: str) -> bool:
    """`words` (normalised: lower case, no punctuation) only say "go on"."""
    return bool(BACKCHANNEL.match(words))


class TalkOver:
    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation
        self._held_turn = False
        """The user's turn now going on held the reply: its words decide."""
        self._task: asyncio.Task[None] | None = None

    def speech_started(self) -> None:
        self._held_turn = False

    def check(self) -> None:
        """Per frame: the user's confirmed speech over a playing reply holds it at hold_ms
        (confirmed in a pause of the turn too: over our echo a word after a consonant often
        is) and interrupts it at barge_in_ms; a hold is let go once nobody is talking and
        the held turn's words (if any) did not interrupt the reply."""
        conv = self.conversation
        reply, vad, options, speaker = conv._reply, conv.endpointer, conv.options, conv.speaker
        playing = reply is not None and not reply.speculative and conv.busy
        if speaker.held and not (playing and (self._still_talking() or self._deciding())):
            speaker.release()  # a cough, a backchannel: the reply goes on
            conv.stats.holds_released += 1
            log.debug("reply released after %d ms of confirmed speech", vad.confirmed_ms)
        if reply is None or not playing or not vad.speaking:
            return
        if vad.confirmed_ms >= options.barge_in_ms:
            conv.barge_in(reply, "speech")
        elif (options.hold_ms is not None and not speaker.held
              and (not vad.pausing or vad.since_confirmed_ms == 0)
              and vad.confirmed_ms >= options.hold_ms):
            speaker.hold()
            self._held_turn = True
            conv.stats.holds += 1
            log.debug("reply held after %d ms of confirmed speech", vad.confirmed_ms)

    def _still_talking(self) -> bool:
        """Whoever made us hold the reply is still talking: their turn goes on, or it has
        paused for less than hold_release_ms — or the gate confirmed them less than that
        ago (over our echo and background talk a user's words come in short confirmed runs
        that do not resume the turn's pause)."""
        vad, release = self.conversation.endpointer, self.conversation.options.hold_release_ms
        if vad.speaking and (not vad.pausing or vad.silent_ms < release):
            return True
        return vad.since_confirmed_ms < release

    def _deciding(self) -> bool:
        """The turn that held the reply has not ended, or its words are being heard."""
        pending = self._task is not None and not self._task.done()
        return pending or (self._held_turn and self.conversation.endpointer.speaking)

    def ended(self, endpoint: Endpoint, reply: Reply | None,
              group: asyncio.TaskGroup | None) -> None:
        """A turn ended while a reply is prepared or played: if it held the reply, hear its
        words; otherwise it was a short sound while the assistant talks, not a turn."""
        if not self._held_turn or reply is None or reply.speculative or group is None:
            return
        self.stop()
        self._task = group.create_task(self._decide(endpoint))

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _decide(self, endpoint: Endpoint) -> None:
        conv = self.conversation
        try:
            noisy = conv.room is not None and conv.room.noisy_ear(now())
            text = await conv.models.for_room(noisy).hear(endpoint.audio, Priority.CONFIRMED)
        except asyncio.CancelledError:
            raise
        except Exception:  # the reply goes on, as it would have without this
            log.exception("hearing a word over the reply failed")
            text = ""
        self._task = None  # decided: interrupting the reply must not cancel this task
        words = normalise(text)
        if not words or is_backchannel(words):
            log.debug("words over the reply: %r; it goes on", text)
            self.check()  # the hold is let go, unless someone talks again
            return
        log.debug("words over the reply: %r; it stops", text)
        conv.interrupt(reason="words over the reply")  # if it still plays
        conv.start_turn(audio=endpoint.audio, text=text)
