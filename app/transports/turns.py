"""What a transport other than the microphone path asks of a Conversation, beyond its
public turn API (`start_turn`, `interrupt`: a client that ends a turn itself, sends
text, or cancels a reply):

- `watch_endpoint`: the endpointer's events, seen by the transport as they happen;
- `text_only`: a conversation that answers in text (no TTS job at all), for Wyoming's
  handle;
- `cannot_ring`: one whose timers nothing could ring (Wyoming's handle).

Every way in runs the one reply path — skills, LLM, integrity rules, history, barge-in
bookkeeping — and none calls a model directly.
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.conversation import Conversation
from pipeline.events import AudioFrame, Pcm, VadEvent
from pipeline.room import Room
from pipeline.vad import Endpointer, VadOptions


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
    conversation.speak_replies(False)


def cannot_ring(conversation: Conversation) -> None:
    """Nothing would carry a timer's ring to the user (Wyoming's handle: each exchange
    ends with its reply): the timer skill says so instead of setting one."""
    if conversation.bell is not None:
        conversation.bell.timers.rings = False
