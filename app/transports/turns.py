"""What a transport other than the microphone path asks of a Conversation.

The browser needs nothing but `Conversation.run(frames)`: apace's endpointer ends each
turn. Other protocols also let the client end a turn (Realtime's manual commit, a Wyoming
`transcript` to handle), send text instead of speech, cancel a reply, or want to report
the endpointer's verdicts. This module gives them that on top of Conversation's own
steps, so every way in runs the one reply path — skills, LLM, integrity rules, history,
barge-in bookkeeping — and none calls a model directly:

- `start_turn`: a committed reply to given audio, or to text, now;
- `interrupt`: what a barge-in does, asked for by the client (response.cancel);
- `watch_endpoint`: the endpointer's events, seen by the transport as they happen;
- `text_only`: a conversation that answers in text (no TTS), for Wyoming's handle.

`start_turn` and `interrupt` use Conversation's private steps (`_start_reply`,
`_cancel_reply`, `_finish`); they belong on Conversation as public methods, and
tests/unit/test_realtime_turns.py pins what they must do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import numpy as np

from pipeline.conversation import Conversation
from pipeline.events import FRAME_SAMPLES, AudioFrame, Pcm, VadEvent
from pipeline.room import Room
from pipeline.timeline import ENDPOINT, now
from pipeline.vad import Endpointer, VadOptions

_NO_AUDIO = np.zeros(FRAME_SAMPLES, np.int16)


class FixedTranscript:
    """A transcriber that hears `text` whatever the audio: a turn given as text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def transcribe(self, pcm: Pcm, context: str = "") -> str:
        return self.text


class SilentSynthesizer:
    """A synthesizer that makes no audio: replies in text only, no TTS compute spent."""

    voice_id = "silent"

    def synthesize(self, text: str) -> Iterator[Pcm]:
        return iter(())


def start_turn(conversation: Conversation, *, audio: Pcm | None = None,
               text: str | None = None) -> bool:
    """Reply now to `audio` (transcribed as usual) or to `text` (taken as the transcript),
    as the endpoint would: committed, on the conversation's history. False when a reply
    is already being prepared or played (the caller says so to its client), or when the
    conversation is not running."""
    if conversation.busy or conversation._group is None:
        return False
    if audio is None and text is None:
        raise ValueError("start_turn needs audio or text")
    conversation._start_reply(_NO_AUDIO if audio is None else audio, now(), speculative=False)
    reply = conversation._reply
    if reply is None:
        return False
    reply.timeline.stamp(ENDPOINT)
    if text is not None:
        # The reply task has not run yet (it was only scheduled): it reads these models.
        reply.models = dataclasses.replace(reply.models, transcriber=FixedTranscript(text))
    return True


def interrupt(conversation: Conversation, *, reason: str = "client cancelled") -> bool:
    """Stop the committed reply now, as a barge-in does: queued audio dropped, model work
    cancelled, the turn recorded as interrupted with what was heard. False when there is
    no committed reply (a speculative one is not the client's to cancel)."""
    reply = conversation._reply
    if reply is None or reply.speculative or not conversation.busy:
        return False
    conversation.barge_ins += 1
    conversation.stats.barge_ins += 1
    dropped = conversation.speaker.clear()
    conversation._cancel_reply(reason=reason)
    conversation.emit("barge_in", {"dropped_ms": dropped * 20, "reason": reason})
    if reply.transcript:
        conversation._finish(reply, interrupted=True)
    return True


class WatchedEndpointer(Endpointer):
    """The conversation's endpointer, telling `on_events` what each frame caused, before
    the conversation acts on it."""

    def __init__(self, options: VadOptions, on_events: Callable[[list[VadEvent]], None],
                 classify: Callable[[Pcm], bool] | None = None, room: Room | None = None) -> None:
        super().__init__(options, classify, room=room)
        self._on_events = on_events

    def push(self, frame: AudioFrame) -> list[VadEvent]:
        events = super().push(frame)
        if events:
            self._on_events(events)
        return events


def watch_endpoint(conversation: Conversation, on_events: Callable[[list[VadEvent]], None],
                   classify: Callable[[Pcm], bool] | None = None) -> None:
    """Report the endpointer's events to `on_events` (call before `run`). `classify`
    replaces webrtcvad (tests)."""
    conversation.endpointer = WatchedEndpointer(conversation.options.vad, on_events, classify,
                                                room=conversation.room)


def text_only(conversation: Conversation) -> None:
    """Replies in text only: no audio is made (Wyoming's handle: Home Assistant speaks the
    reply through its own TTS step)."""
    conversation.models = dataclasses.replace(conversation.models,
                                              synthesizer=SilentSynthesizer())


def cannot_ring(conversation: Conversation) -> None:
    """Nothing would carry a timer's ring to the user (Wyoming's handle: each exchange
    ends with its reply): the timer skill says so instead of setting one."""
    if conversation.bell is not None:
        conversation.bell.timers.rings = False
