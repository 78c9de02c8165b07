"""The user talking over a playing reply: hold it, interrupt it, or let it go on.

Per frame, the room gate's confirmed speech over a committed reply holds it at hold_ms
(nothing plays, nothing is dropped); a held reply is interrupted at held_barge_in_ms of
it, before its words are known (barge_in_ms when not held).

A short word over the reply ("Wait.", "Stop.") is confirmed for only 140-180 ms: it held
the reply, the hold let go 200 ms into the pause after it, the reply played on, and the
word's turn was dropped as a sound made while the assistant talks. So a turn that held
the reply keeps it held until the turn ends and its words are heard: words interrupt the
reply and are answered as the user's turn; nothing (a cough: Whisper hears no speech) or
a listener's backchannel ("mm-hm", "yeah", "okay") let it go on from where it stopped —
as LiveKit Agents resumes a "false interruption" that brought no words. The words are
heard when the turn first pauses, as a speculation is: words other than a backchannel
interrupt the reply there and become the speculative reply to the turn, committed at its
endpoint like any other — so a question asked over the reply is answered as fast as one
asked in silence, and a "mm-hm" lets the reply go on ~200 ms after it, not an endpoint
later. (At barge_in_ms, 200 ms, a "mm-hm" or an "okay" interrupted the reply.)

A collaborator of one Conversation (like pipeline.turn.rehearing), through its turn port
(pipeline.turn.turn_port).
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from difflib import SequenceMatcher
from typing import TYPE_CHECKING

from pipeline.compute.workers import Priority
from pipeline.events import Endpoint, Pcm, SilenceOnset
from pipeline.listen.asr import TALK_OVER_VOCABULARY
from pipeline.listen.turn_detector import normalise

if TYPE_CHECKING:
    from pipeline.answer.reply import Reply
    from pipeline.turn.turn_port import TurnPort

log = logging.getLogger("pipeline.conversation")

BACKCHANNEL = re.compile(
    r"^(?:(?:m+ ?h+ ?[mn]+|m[mhn]*(?: [mhn]+)+|u+h+ ?h+u+h+|h+m+|m+|a+h+|o+h+|yeah|yep|yup|"
    r"okay|ok|right|alright|all right|i see|got it|cool|nice|wow|great|good|true|indeed|exactly|"
    r"really|uh|um)(?: |$))+$"
)
"""A listener's signal that they follow, which lets the reply go on: "mm-hm" (whisper-base
spells Piper's as "MMHN.", "M-H-M.", "M-h-m-h-n."), "yeah, yeah", "okay", "I see". Anything with other
words interrupts ("yeah, but…", "wait"), and so do "yes" and "sure": the answer to a
question the reply asked."""


def is_backchannel(words: str) -> bool:
    """`words` (normalised: lower case, no punctuation) only say "go on"."""
    return bool(BACKCHANNEL.match(words))


def repeats_reply(words: str, reply: str) -> bool:
    """`words` (normalised) are the reply's own coming back through the microphone, past
    the room gate (a client that says it cancels its echo and does not): two or more of
    them, at least 60 % found in order in the reply, two of them in a row."""
    said, ours = words.split(), normalise(reply).split()
    if len(said) < 2 or not ours:
        return False
    blocks = SequenceMatcher(None, said, ours, autojunk=False).get_matching_blocks()
    return (max(b.size for b in blocks) >= 2
            and sum(b.size for b in blocks) >= math.ceil(0.6 * len(said)))


class TalkOver:
    def __init__(self, conversation: TurnPort) -> None:
        self.conversation = conversation
        self._held_turn = False
        """The user's turn now going on held the reply: its words decide."""
        self._task: asyncio.Task[None] | None = None

    def speech_started(self) -> None:
        self._held_turn = False

    def check(self) -> None:
        """Per frame: the user's confirmed speech over a playing reply holds it at hold_ms
        (confirmed in a pause of the turn too: over our echo a word after a consonant often
        is) and interrupts it at barge_in_ms, or at held_barge_in_ms if it is held; a hold
        is let go once nobody is talking and the held turn's words (if any) did not
        interrupt the reply."""
        conv = self.conversation
        reply, vad, options = conv.in_flight, conv.endpointer, conv.options
        playing = reply is not None and not reply.speculative and conv.busy
        if conv.reply_held and not (playing and (self._still_talking() or self._deciding())):
            conv.release_reply()  # a cough, a backchannel: the reply goes on
            log.debug("reply released after %d ms of confirmed speech", vad.confirmed_ms)
        if reply is None or not playing or not vad.speaking:
            return
        if (options.hold_ms is not None and (not vad.pausing or vad.since_confirmed_ms == 0)
                and options.hold_ms <= vad.confirmed_ms < self._barge_in_ms(held=True)):
            self._held_turn = True  # also a turn that talks on after its "yeah" let it go on
            if not conv.reply_held:
                conv.hold_reply()
                log.debug("reply held after %d ms of confirmed speech", vad.confirmed_ms)
        # On a confirmed frame only: a reply a "mm-hm" let go on plays through its pause.
        if vad.since_confirmed_ms == 0 and vad.confirmed_ms >= self._barge_in_ms(held=conv.reply_held):
            conv.barge_in(reply, "speech")

    def _barge_in_ms(self, *, held: bool) -> int:
        options = self.conversation.options
        if held and options.held_barge_in_ms is not None:
            return options.held_barge_in_ms
        return options.barge_in_ms

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

    def paused(self, onset: SilenceOnset) -> bool:
        """The turn that holds the reply paused: hear its words now, as a speculation of
        it would be. True if this onset is taken (the reply is not the turn's to
        speculate on)."""
        reply = self.conversation.in_flight
        if not self._held_turn or reply is None or reply.speculative:
            return False
        self.stop()
        self._task = self.conversation.spawn(self._decide(onset.audio, onset=onset))
        return self._task is not None

    def resumed(self) -> None:
        """The turn went on after its pause: what was heard of it is not the turn."""
        self.stop()

    def ended(self, endpoint: Endpoint, reply: Reply | None) -> None:
        """A turn ended while a reply is prepared or played: if it held the reply, its words
        decide (heard since its pause, or now); otherwise it was a short sound while the
        assistant talks, not a turn."""
        if not self._held_turn or reply is None or reply.speculative:
            return
        if self._task is not None and not endpoint.voice_after_onset:
            return  # heard since the pause, and nothing was said after it
        self.stop()
        self._task = self.conversation.spawn(self._decide(endpoint.audio))

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _decide(self, audio: Pcm, *, onset: SilenceOnset | None = None) -> None:
        """Words (not a backchannel) interrupt the reply and are the user's turn: its
        speculative reply if heard at a pause (committed at the endpoint), else its reply."""
        conv = self.conversation
        try:
            text = await conv.models_now().hear(audio, Priority.CONFIRMED,
                                                vocabulary=TALK_OVER_VOCABULARY)
        except asyncio.CancelledError:
            raise
        except Exception:  # the reply goes on, as it would have without this
            log.exception("hearing a word over the reply failed")
            text = ""
        self._task = None  # decided: interrupting the reply must not cancel this task
        words = normalise(text)
        reply = conv.in_flight
        echo = reply is not None and not reply.speculative and repeats_reply(words, reply.text)
        if not words or is_backchannel(words) or echo:
            log.debug("words over the reply: %r%s; it goes on", text, " (its own)" * echo)
            self._held_turn = False  # the hold is let go once they are quiet
            self.check()
            return
        log.debug("words over the reply: %r; it stops", text)
        conv.interrupt(reason="words over the reply")  # if it still plays
        if onset is not None:
            conv.speculate(onset, text=text)
        else:
            conv.start_turn(audio=audio, text=text)
