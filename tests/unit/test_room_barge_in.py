"""Barge-in counts only what the room gate confirms: voice that is our own echo (or the
room) keeps the assistant talking, the user's voice interrupts it. Scripted models; the
gate's verdicts are scripted too (its real behaviour: test_room_gate, test_room_echo)."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.conversation_events import BargeIn
from pipeline.listen.vad import Endpointer
from pipeline.room import Heard, Room
from pipeline.speaker import Speaker
from tests.fakes import (
    TEST_VAD,
    FakeResponder,
    FakeSynthesizer,
    FakeTranscriber,
    Mic,
    Workers,
    any_sound,
    conversation,
    until,
)

pytestmark = pytest.mark.timeout(10)


class ScriptedRoom(Room):
    """Calls every voiced frame voiced; confirms it only while `user` is True."""

    def __init__(self) -> None:
        super().__init__()
        self.user = True
        self.played_frames = 0

    def played(self, pcm: np.ndarray, t: float | None = None) -> None:
        self.played_frames += 1

    def judge(self, pcm: np.ndarray, t: float, voiced: bool, *, in_utterance: bool) -> Heard:
        return Heard(voiced, voiced and self.user, -20.0)


async def test_voice_the_gate_does_not_confirm_never_barges_in_and_the_user_does(
        workers: Workers) -> None:
    reply = " ".join(["word"] * 40) + "."  # 4 s of reply audio
    models = workers.models(FakeTranscriber("tell me"), FakeResponder([reply]), FakeSynthesizer())
    conv, events = conversation(models, Speaker(), barge_in_ms=200)
    room = ScriptedRoom()
    conv.endpointer = Endpointer(TEST_VAD, classify=any_sound, room=room)
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: conv.speaker.queued_frames >= 150, what="reply audio")
        room.user = False  # our own voice, heard back
        await mic.send(True, 30, play=True)
        assert conv.barge_ins == 0 and conv.busy
        room.user = True  # a short "mm" starts an utterance ...
        await mic.send(True, 3, play=True)
        room.user = False  # ... that our echo then carries on: voiced, never confirmed
        await mic.send(True, 20, play=True)
        assert conv.barge_ins == 0 and conv.busy
        await mic.send(False, 12, play=True)  # the utterance ends (held: too short)
        room.user = True  # the user talks over it
        await mic.send(True, 9, play=True)
        assert conv.barge_ins == 0
        await mic.send(True, 1, play=True)  # 200 ms confirmed
        assert conv.barge_ins == 1
    assert sum(isinstance(e, BargeIn) for e in events) == 1


def test_the_conversation_tells_its_room_what_the_speaker_plays(workers: Workers) -> None:
    """The echo reference is every frame the transport takes from the speaker."""
    from pipeline.conversation import Conversation
    from pipeline.conversation_options import ConversationOptions

    models = workers.models(FakeTranscriber("x"), FakeResponder(["y"]), FakeSynthesizer())
    speaker, room = Speaker(), ScriptedRoom()
    Conversation(models, speaker, ConversationOptions(), room=room)
    speaker.push(np.ones(3 * 320, np.int16))
    while speaker.pop() is not None:
        pass
    assert room.played_frames == 3
