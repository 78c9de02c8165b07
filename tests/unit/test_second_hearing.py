"""The second ear: a turn that names a skill's thing but that no skill took is heard again
by the sturdier ear, and a skill answers that ear's words; every other turn is heard once."""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from models.intents import load_recognizer
from models.list_store import SqliteListStore
from pipeline.answer.model_calls import Models
from pipeline.answer.second_hearing import hear_again
from pipeline.compute.workers import Priority
from pipeline.conversation import Conversation
from pipeline.conversation_events import ConversationEvent, Turn, to_wire
from pipeline.conversation_options import ConversationOptions
from pipeline.events import Pcm
from pipeline.listen.ear import Ear
from pipeline.listen.endpointing import EndpointOptions
from pipeline.skills import SkillContext, SkillReply, Timers, default_skills
from pipeline.skills.domain import names_a_skill
from pipeline.skills.math import MathSkill
from pipeline.speaker import Speaker
from pipeline.timeline import now
from tests.fakes import (
    TEST_VAD,
    DoubtfulGate,
    FakeDetector,
    FakeResponder,
    FakeSynthesizer,
    FakeTranscriber,
    Mic,
    Workers,
    any_sound,
)

pytestmark = pytest.mark.timeout(10)


def two_ears(workers: Workers, first: str, second: str | Exception,
             reply: str = "It is an animal.", *, verdict: float | None = None,
             ) -> tuple[Models, FakeTranscriber, FakeResponder]:
    """`verdict`: the turn detector's score of `first` (None: no detector)."""
    responder = FakeResponder([reply])
    detector = FakeDetector({first: verdict}) if verdict is not None else None
    models = workers.models(FakeTranscriber(first), responder, FakeSynthesizer(), detector)
    sturdier = FakeTranscriber(second)
    return dataclasses.replace(models, noisy_ear=Ear(sturdier, models.asr_worker)), sturdier, responder


async def one_turn(models: Models, timers: Timers | None = None, *, intents: bool = False,
                   ) -> tuple[Conversation, list[ConversationEvent]]:
    """One spoken turn; `timers` may already run; `intents`: Home Assistant's recognizer."""
    events: list[ConversationEvent] = []
    timers = timers if timers is not None else Timers()
    options = ConversationOptions(vad=TEST_VAD, endpoint=None, partial_interval_s=None)
    skills = default_skills(timers=timers, store=None,
                            recognizer=load_recognizer() if intents else None)
    conv = Conversation(models, Speaker(), options, emit=events.append, skills=skills,
                        timers=timers)
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 1)
    return conv, events


async def test_a_misheard_timer_request_is_answered_from_the_second_ears_words(
    workers: Workers,
) -> None:
    models, sturdier, responder = two_ears(workers, "Said the timer, dear, ten minutes.",
                                           "Set a timer for 10 minutes.")
    conv, events = await one_turn(models)
    (turn,) = conv.turns
    assert turn.skill == "timer" and "10 minute" in turn.reply
    assert (turn.transcript, turn.first_heard) == ("Set a timer for 10 minutes.",
                                                   "Said the timer, dear, ten minutes.")
    assert responder.histories == [] and len(sturdier.calls) == 1
    assert conv.bell is not None and len(conv.bell.timers.active()) == 1  # really set
    assert conv.stats.heard_again == 1
    wire = to_wire(next(e for e in events if isinstance(e, Turn)))
    assert wire["first_heard"] == "Said the timer, dear, ten minutes."


async def test_a_question_that_names_no_skills_thing_is_heard_once(workers: Workers) -> None:
    models, sturdier, responder = two_ears(workers, "How many legs does a spider have?",
                                           "unused")
    conv, _ = await one_turn(models)
    assert sturdier.calls == [] and conv.turns[0].skill is None
    assert conv.turns[0].first_heard is None and conv.stats.heard_again == 0
    assert responder.users == ["How many legs does a spider have?"]


@pytest.mark.parametrize("second", ["Bet a timer four ten minutes.",
                                    "What is a timer?", RuntimeError("decoder failed")])
async def test_the_llm_reads_the_first_ears_words_when_no_skill_takes_the_second(
    workers: Workers, second: str | Exception,
) -> None:
    """A second hearing no skill takes (or that fails) changes nothing: the first ear's
    words go to the LLM, and the turn says it was heard once."""
    models, sturdier, responder = two_ears(workers, "What is a timer?", second,
                                           reply="A clock that counts down.")
    conv, _ = await one_turn(models)
    (turn,) = conv.turns
    assert len(sturdier.calls) == 1
    assert (turn.skill, turn.transcript, turn.first_heard) == (None, "What is a timer?", None)
    assert responder.users == ["What is a timer?"]


async def test_a_turn_a_skill_took_as_first_heard_is_heard_once(workers: Workers) -> None:
    models, sturdier, _ = two_ears(workers, "Set a timer for 10 minutes.", "unused")
    conv, _ = await one_turn(models)
    assert conv.turns[0].skill == "timer" and sturdier.calls == []


async def test_a_noisy_room_already_heard_by_the_sturdier_ear_is_not_heard_again(
    workers: Workers,
) -> None:
    models, sturdier, _ = two_ears(workers, "unused", "Sad a timer for 10 minutes.")
    noisy = models.for_room(True)
    assert noisy.second_ear is None and models.second_ear is not None
    skill_calls: list[str] = []

    def answer(text: str) -> SkillReply | None:
        skill_calls.append(text)
        return None

    pcm: Pcm = np.zeros(1600, np.int16)
    assert await hear_again(noisy, pcm, "Sad a timer.", answer, Priority.CONFIRMED) is None
    assert sturdier.calls == [] and skill_calls == []


def test_the_words_that_name_a_skills_thing() -> None:
    for heard in ("Tim is left on my timer.", "Renew 25 minute timer.", "But I will not my list.",
                  "What's the case date?", "Tell me Berlin weather light.",
                  "Wake me in two hours", "remind me at noon"):
        assert names_a_skill(heard), heard
    for other in ("How many legs does a spider have?", "Tell me a joke.",
                  "What is the capital of France?", "Who timed the listing?"):
        assert not names_a_skill(other), other


class Heard(FakeTranscriber):
    """A FakeTranscriber that says when it was first asked."""

    def __init__(self, *texts: str) -> None:
        super().__init__(*texts)
        self.asked = threading.Event()

    def transcribe(self, pcm: Pcm, context: str = "", *, vocabulary: str | None = None) -> str:
        self.asked.set()
        return super().transcribe(pcm, context, vocabulary=vocabulary)


async def test_late_voice_that_changes_no_word_keeps_the_second_ears_reply(
    workers: Workers,
) -> None:
    """The turn is heard again after a soft sound in its pause (pipeline.turn.rehearing) and
    the first ear writes the same words: the speculation, answered from the second ear's
    words, stands; compared with those, the first ear's would always differ."""
    first = "Said the timer, dear, ten minutes."
    models = workers.models(FakeTranscriber(first), FakeResponder(["unused"]),
                            FakeSynthesizer())
    sturdier = Heard("Set a timer for 10 minutes.")
    models = dataclasses.replace(models, noisy_ear=Ear(sturdier, models.asr_worker))
    timers = Timers()
    conv = Conversation(models, Speaker(), ConversationOptions(vad=TEST_VAD, endpoint=None,
                                                               partial_interval_s=None),
                        skills=default_skills(timers=timers, store=None), timers=timers)
    gate = DoubtfulGate(TEST_VAD, classify=any_sound)
    conv.endpointer = gate
    async with Mic(conv) as mic:
        await gate.soft_word_after_onset(mic, sturdier.asked)
        await mic.send(False, 30)
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert conv.speculation.kept == 1 and len(sturdier.calls) == 1
    (turn,) = conv.turns
    assert (turn.skill, turn.first_heard) == ("timer", first)


async def timers_turn(models: Models) -> tuple[Conversation, Timers]:
    """One turn while a 10 minute pizza timer runs, with Home Assistant's intents."""
    timers = Timers()
    timers.add("timer", now() + 600, "pizza timer", "pizza", datetime.now(), duration_s=600)
    conv, _ = await one_turn(models, timers, intents=True)
    return conv, timers


async def test_a_misheard_timer_name_that_finds_nothing_is_heard_again(
    workers: Workers,
) -> None:
    """"Cancel might be the timer" names no running timer: the second ear's "cancel my
    pizza timer" is answered, and the pizza timer is really cancelled."""
    models, sturdier, responder = two_ears(workers, "Cancel might be the timer.",
                                           "Cancel my pizza timer.")
    conv, timers = await timers_turn(models)
    (turn,) = conv.turns
    assert len(sturdier.calls) == 1 and responder.histories == []
    assert (turn.skill, turn.transcript, turn.first_heard) == (
        "timer", "Cancel my pizza timer.", "Cancel might be the timer.")
    assert timers.active() == []


@pytest.mark.parametrize("second", ["Cancel mighty beat timer.", RuntimeError("failed")])
async def test_the_first_found_nothing_stands_when_the_second_hearing_finds_nothing_too(
    workers: Workers, second: str | Exception,
) -> None:
    models, sturdier, _ = two_ears(workers, "Cancel might be the timer.", second)
    conv, timers = await timers_turn(models)
    (turn,) = conv.turns
    assert len(sturdier.calls) == 1 and turn.first_heard is None
    assert turn.skill == "timer" and "There's no" in turn.reply
    assert [t.name for t in timers.active()] == ["pizza"]


def test_only_a_named_timer_missing_among_running_ones_counts_as_found_nothing() -> None:
    """Home Assistant's intents and apace's own timer phrasings alike."""
    clock = datetime(2024, 5, 1, 8, 0, tzinfo=ZoneInfo("Europe/London"))
    ctx = SkillContext(now=clock, monotonic=1000.0)
    timers = Timers()
    skills = default_skills(timers=timers, store=None, recognizer=load_recognizer())

    def reply(text: str) -> SkillReply:
        found = skills.answer(text, replace(ctx, transcript=text))
        assert found is not None and found.skill == "timer", text
        return found

    assert not reply("Cancel the pasta timer.").found_nothing  # nothing runs at all
    timers.add("timer", 1600.0, "pizza timer", "pizza", clock + timedelta(minutes=10),
               duration_s=600)
    for text in ("Cancel the pasta timer.", "How much time is left on the pasta timer?",
                 "Status of the pasta timer.", "Pause the pasta timer.",
                 "Add 2 minutes to the pasta timer.", "Cancel the 5 minute timer."):
        assert reply(text).found_nothing, text
    for text in ("Cancel the pizza timer.", "How much time is left?", "Pause the timer."):
        assert not reply(text).found_nothing, text


def test_an_item_missing_from_a_list_with_others_on_it_counts_as_found_nothing(
        tmp_path: Path) -> None:
    """An item that is not on a list holding other things may be misheard: heard again."""
    ctx = SkillContext(now=datetime(2024, 5, 1, 8, 0, tzinfo=ZoneInfo("Europe/London")),
                       monotonic=1000.0)
    store = SqliteListStore(tmp_path / "lists.sqlite3")
    skills = default_skills(timers=Timers(), store=store, recognizer=load_recognizer())

    def reply(text: str) -> SkillReply:
        found = skills.answer(text, replace(ctx, transcript=text))
        assert found is not None and found.skill == "list", text
        return found

    assert not reply("Remove kiwis from my shopping list.").found_nothing  # an empty list
    store.add("default", "shopping", ["rice", "bread"])
    for text in ("Remove kiwis from my shopping list.", "Check off kiwis from my shopping list."):
        assert reply(text).found_nothing, text
    assert not reply("Remove bread from my shopping list.").found_nothing
    store.close()


async def unsure_turn(models: Models, *, hear_unsure: bool = True) -> Conversation:
    """One spoken turn with the turn detector's verdict and adaptive endpointing."""
    options = ConversationOptions(vad=TEST_VAD, partial_interval_s=None, hear_unsure=hear_unsure,
                                  endpoint=EndpointOptions(complete_ms=100, statement_ms=300,
                                                           trailing_ms=400))
    conv = Conversation(models, Speaker(), options, emit=lambda _e: None,
                        skills=default_skills(timers=Timers(), store=None, extra=[MathSkill()]))
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 1)
    return conv


PLANTS = "Photosynthesis is how plants make food."
FOCUS, MEANT = "What is the focus in?", "What is photosynthesis?"


async def test_a_turn_the_detector_is_unsure_of_is_heard_again_before_the_llm_reads_it(
    workers: Workers,
) -> None:
    models, sturdier, responder = two_ears(workers, FOCUS, MEANT, PLANTS, verdict=-8.0)
    conv = await unsure_turn(models)
    (turn,) = conv.turns
    assert (turn.transcript, turn.first_heard) == ("What is photosynthesis?",
                                                   "What is the focus in?")
    assert responder.users == ["What is photosynthesis?"]
    assert len(sturdier.calls) == 1


async def test_a_turn_the_detector_calls_finished_is_heard_once(workers: Workers) -> None:
    models, sturdier, _ = two_ears(workers, FOCUS, MEANT, PLANTS, verdict=-2.0)
    conv = await unsure_turn(models)
    assert conv.turns[0].transcript == "What is the focus in?" and sturdier.calls == []
    # Off, an unsure one is heard once too.
    models, sturdier, _ = two_ears(workers, FOCUS, MEANT, PLANTS, verdict=-8.0)
    conv = await unsure_turn(models, hear_unsure=False)
    assert conv.turns[0].first_heard is None and sturdier.calls == []


async def test_an_unsure_turn_a_skill_takes_on_second_hearing_is_the_skills(
    workers: Workers,
) -> None:
    models, _sturdier, responder = two_ears(workers, "What is 12 time 12?",
                                            "What is 12 times 12?", PLANTS, verdict=-8.0)
    conv = await unsure_turn(models)
    (turn,) = conv.turns
    assert turn.skill == "math" and "144" in turn.reply
    assert responder.users == []
