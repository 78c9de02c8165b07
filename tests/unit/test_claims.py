"""The LLM may not claim a timer or list action that no skill performed: the words are
checked (pipeline.answer.claims) and, through a conversation, the store is too."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest

from models.intents import load_recognizer
from pipeline.answer.claims import NOT_DONE, claims_action, clock_claim
from pipeline.conversation import Conversation
from pipeline.conversation_options import ConversationOptions
from pipeline.skills import Timers, default_skills
from pipeline.skills.clock import ClockSkill
from pipeline.speaker import Speaker
from tests.fakes import TEST_VAD, FakeResponder, FakeSynthesizer, FakeTranscriber, Mic, Workers

pytestmark = pytest.mark.timeout(10)


@pytest.mark.parametrize("reply", [
    "Pizza timer paused.", "Sure! I have paused your pizza timer.", "I've set a timer for 5 minutes.",
    "Added milk to your shopping list.", "Okay, your timer is set.", "Timer has been cancelled.",
    "The pizza timer is now paused.", "I'll remind you at 5.",
    # The 0.5B copied a skill's confirmation for "Continue the timer name D." (dev bench).
    "56 minute timer, starting now.", "OK, a 10 minute timer, starting now.",
])
def test_a_claimed_action_is_caught(reply: str) -> None:
    assert claims_action(reply, "put the pizza timer on pause for me")


@pytest.mark.parametrize(("reply", "transcript"), [
    ("I can't pause timers, sorry.", "pause the pizza timer"),
    ("A timer counts down time.", "what is a timer"),
    ("I'm sorry, I cannot do that.", "snooze the timer"),
    ("Pizza timer paused.", "tell me about pizza"),  # no timer asked about: chat
    ("I've set the table for dinner.", "what should I cook tonight"),
    ("Tap the pause button and it can be paused.", "how do I pause a timer on my phone"),
])
def test_honest_words_and_chat_are_left_alone(reply: str, transcript: str) -> None:
    assert not claims_action(reply, transcript)


def conversation(workers: Workers, transcripts: list[str], reply: list[str],
                 extra: tuple[ClockSkill, ...] = ()) -> tuple[Conversation, Timers]:
    timers = Timers()
    models = workers.models(FakeTranscriber(*transcripts), FakeResponder(reply), FakeSynthesizer())
    options = ConversationOptions(vad=TEST_VAD, endpoint=None, partial_interval_s=None)
    skills = default_skills(timers=timers, store=None, recognizer=load_recognizer(), extra=extra)
    return Conversation(models, Speaker(), options, skills=skills, timers=timers), timers


def turns(conv: Conversation, count: int) -> Callable[[], bool]:
    return lambda: len(conv.turns) == count


async def test_pause_the_pizza_timer_really_pauses_it(workers: Workers) -> None:
    conv, timers = conversation(workers, ["Set a pizza timer for 10 minutes.",
                                          "Pause the pizza timer."], ["Pizza timer paused."])
    async with Mic(conv) as mic:
        for turn in (1, 2):
            await mic.say()
            await mic.play_until(turns(conv, turn))
    assert conv.turns[1].skill == "timer" and conv.turns[1].reply.startswith("Pizza timer paused")
    assert [t.paused for t in timers.active()] == [True]


async def test_an_llm_claim_no_skill_made_is_not_said(workers: Workers) -> None:
    """Words no skill knows; the LLM says it paused the timer: it did not, so that is
    not said, and the timer runs on."""
    conv, timers = conversation(
        workers, ["Set a pizza timer for 10 minutes.", "Let the pizza timer sleep for a bit."],
        ["Sure, ", "pizza timer ", "paused", "."])
    async with Mic(conv) as mic:
        for turn in (1, 2):
            await mic.say()
            await mic.play_until(turns(conv, turn))
    assert conv.turns[1].skill is None
    assert "paused" not in conv.turns[1].reply and NOT_DONE in conv.turns[1].reply
    assert [t.paused for t in timers.active()] == [False]


@pytest.mark.parametrize(("reply", "asked"), [
    ("The current date is", "what's the date today"), ("Today's date is 8/1/2023.", "what's the date today"),
    ("Today is Monday, August 1st.", "what's the date today"),
    ("It's December 7, 2026.", "what's the date today"),
    ("The time is", "what time is it"), ("It's 3 PM.", "what time is it"),
    ("It is now 10 o'clock.", "what time is it"),
    # the dev bench's, for "what's todays date" and "what's weather like" misheard
    ("The case date is 2023-10-05.", "what's the date today"), ("The like is 10:35 AM.", "what time is it"),
    # what the LLM may know, or says of no clock
    ("Today is a good day for a walk.", None), ("Christmas is on December 25th.", None),
    ("The moon landing was on July 20, 1969.", None), ("It is currently raining in Seattle.", None),
    ("15:00 is 3 PM.", None), ("Midnight is 12 AM.", None), ("The date of Easter changes.", None),
    ("The meeting is at 10:30 AM.", None),
])
def test_the_date_or_time_said_by_the_llm_is_found(reply: str, asked: str | None) -> None:
    assert clock_claim(reply) == asked


async def test_an_llm_that_says_the_date_is_answered_by_the_clock(workers: Workers) -> None:
    """Words no skill knows ("What's the case date?"); the LLM makes up a date: the clock
    says today's instead, and the made-up one is never said."""
    conv, _ = conversation(workers, ["What's the case date?"],
                           ["The current ", "date is ", "8/1/2023", "."], extra=(ClockSkill(),))
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(turns(conv, 1))
    reply = conv.turns[0].reply
    assert "8/1/2023" not in reply and "current" not in reply
    assert reply.startswith("Today is ") and datetime.now().strftime("%A") in reply
