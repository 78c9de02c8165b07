"""The noisy-room ear: a conversation whose room is noisy is heard by the sturdier model,
turn by turn, and a turn heard again (late voice) by the ear that heard it first."""

from __future__ import annotations

import dataclasses

from pipeline.answer.llm import Message
from pipeline.listen.ear import Ear
from pipeline.speaker import Speaker
from tests.fakes import (
    TEST_VAD,
    DoubtfulGate,
    FakeResponder,
    FakeSynthesizer,
    FakeTranscriber,
    Mic,
    Workers,
    any_sound,
    conversation,
)


class Loudness:
    """Stands in for a Room: only whether it is noisy now."""

    def __init__(self) -> None:
        self.noisy = False
        self.asked: list[float] = []

    def noisy_ear(self, t: float) -> bool:
        self.asked.append(t)
        return self.noisy


async def test_each_turn_is_heard_by_the_ear_its_room_calls_for(workers: Workers) -> None:
    quiet, noisy = FakeTranscriber("what time is it"), FakeTranscriber("what day is it")
    models = workers.models(quiet, FakeResponder(["Noon."]), FakeSynthesizer())
    models = dataclasses.replace(models, noisy_ear=Ear(noisy, models.asr_worker))
    conv, _ = conversation(models, Speaker())
    room = Loudness()
    conv.room = room  # type: ignore[assignment]
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 1)
        room.noisy = True
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 2)
    assert [m.content for m in conv.history if m.role == "user"] == [
        "what time is it", "what day is it"]
    assert len(quiet.calls) == 1 and len(noisy.calls) == 1 and room.asked
    assert conv.stats.noisy_ear_replies == 1


async def test_without_a_noisy_room_ear_a_noisy_room_is_heard_by_the_one_ear(
    workers: Workers,
) -> None:
    quiet = FakeTranscriber("what time is it")
    conv, _ = conversation(workers.models(quiet, FakeResponder(["Noon."]), FakeSynthesizer()),
                           Speaker())
    room = Loudness()
    room.noisy = True
    conv.room = room  # type: ignore[assignment]
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert conv.history[0] == Message("user", "what time is it")


async def test_a_turn_heard_again_is_heard_by_the_ear_that_heard_it(workers: Workers) -> None:
    """The room turns quiet between the onset and the late word: comparing the noisy ear's
    words with the quiet ear's would always differ (and drop a good speculation)."""
    quiet = FakeTranscriber("unused")
    noisy = FakeTranscriber("how many items are on my list")
    responder = FakeResponder(["Two."], delay_s=0.05)
    models = workers.models(quiet, responder, FakeSynthesizer())
    models = dataclasses.replace(models, noisy_ear=Ear(noisy, models.asr_worker))
    conv, _ = conversation(models, Speaker())
    room = Loudness()
    room.noisy = True
    conv.room = room  # type: ignore[assignment]
    gate = DoubtfulGate(TEST_VAD, classify=any_sound)
    conv.endpointer = gate
    async with Mic(conv) as mic:
        await gate.soft_word_after_onset(mic, responder.started,
                                         then=lambda: setattr(room, "noisy", False))
        await mic.send(False, 30)
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert quiet.calls == [] and len(noisy.calls) == 2
    assert conv.speculation.kept == 1 and responder.users == ["how many items are on my list"]


def test_the_noisy_room_ear_is_loaded_with_its_own_beam_width(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    import app.runtime as runtime
    from models.locate import Located
    from pipeline.listen.asr import AsrOptions

    loaded: dict[str, AsrOptions] = {}
    monkeypatch.setattr(runtime, "load_transcriber",
                        lambda path, device, compute, threads, options:
                        loaded.setdefault(str(path), options))
    settings = runtime.Settings(asr=AsrOptions(beam_size=2, noisy_beam_size=4))
    ear = {"asr": Located("asr", Path("tiny"), "flag")}
    assert runtime.load_ears(settings, ear, 1)[1] is None
    runtime.load_ears(settings, {**ear, "noisy_asr": Located("asr", Path("base"), "flag")}, 1)
    assert (loaded["tiny"].beam_size, loaded["base"].beam_size) == (2, 4)
    assert loaded["base"].vocabulary == loaded["tiny"].vocabulary  # the rest is the same
