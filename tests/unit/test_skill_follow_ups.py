"""Follow-ups on the last result: the skills, in the server's order, read what the turn
before answered (its `LastResult`), and fire only when there is one of the right kind."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from pipeline.quality import is_echo, is_refusal, is_repeat
from pipeline.skills import LastResult, SkillContext, Skills, Timers, default_skills
from pipeline.skills.clock import ClockSkill
from pipeline.skills.convert import ConvertSkill
from pipeline.skills.days import DayFollowUp
from pipeline.skills.hush import HushSkill
from pipeline.skills.math import MathSkill
from pipeline.skills.offline import OfflineSkill
from pipeline.skills.refusals import RefusalFollowUp
from pipeline.skills.social import SocialSkill
from pipeline.skills.spell import SpellSkill

FRIDAY = datetime(2026, 12, 4, 15, 0, tzinfo=ZoneInfo("America/New_York"))


def server_skills() -> Skills:
    """The order `app.runtime.stateless_skills` gives them, after the timers."""
    return default_skills(timers=Timers(), store=None, extra=[
        HushSkill(), SocialSkill(), DayFollowUp(), ClockSkill(), MathSkill(), ConvertSkill(),
        SpellSkill(), RefusalFollowUp(), OfflineSkill()])


def talk(*transcripts: str) -> list[str | None]:
    """Each transcript's skill reply (None: the LLM's), the last result carried on as the
    conversation carries it: a skill's result, or the LLM's topic."""
    skills, last, replies = server_skills(), None, []
    for transcript in transcripts:
        ctx = SkillContext(now=FRIDAY, monotonic=0.0, transcript=transcript, last=last,
                           previous=next((r for r in reversed(replies) if r), ""))
        reply = skills.answer(transcript, ctx)
        replies.append(None if reply is None else reply.text)
        last = (reply.result if reply is not None
                else LastResult(skill="llm", kind="topic", topic=transcript))
    return replies


@pytest.mark.parametrize(("follow_up", "spoken"), [
    ("Add five to that.", "84 plus 5 is 89."),
    ("Plus five.", "84 plus 5 is 89."),
    ("And divided by two?", "84 divided by 2 is 42."),
    ("What's that times three?", "84 times 3 is 252."),
    ("Take away four.", "84 minus 4 is 80."),
    ("Subtract 4 from it.", "84 minus 4 is 80."),
    ("Multiply that by 2.", "84 times 2 is 168."),
    ("Double it.", "84 times 2 is 168."),
    ("What's half of that?", "Half of 84 is 42."),
    ("And squared?", "84 squared is 7056."),
    ("Now add another five.", "84 plus 5 is 89."),
    ("Add 5 more.", "84 plus 5 is 89."),
    ("And then divide it by 2.", "84 divided by 2 is 42."),
    ("Then minus 4.", "84 minus 4 is 80."),
    ("Take that away from 100.", "100 minus 84 is 16."),
    ("Divide 168 by that.", "168 divided by 84 is 2."),
    ("What's 10% of that?", "10 percent of 84 is 8.4."),
    ("What's the square root of that?", "The square root of 84 is about 9.17."),
])
def test_a_sum_goes_on_from_the_last_answer(follow_up: str, spoken: str) -> None:
    assert talk("What is 12 times 7?", follow_up) == ["12 times 7 is 84.", spoken]


def test_a_chain_of_follow_ups_works_on_each_answer_in_turn() -> None:
    assert talk("What is 12 times 7?", "Add five to that.", "And divided by two?")[1:] == [
        "84 plus 5 is 89.", "89 divided by 2 is forty-four and a half."]


def test_money_stays_money_in_a_follow_up() -> None:
    assert talk("What's 20% off 50 dollars?", "Plus five.")[1] == "40 dollars plus 5 is 45 dollars."


def test_a_new_sum_after_a_sum_is_its_own() -> None:
    """A whole sum, even one that starts with minus, is not a follow-up."""
    assert talk("What is 12 times 7?", "What is minus 5 plus 3?")[1] == "Minus 5 plus 3 is minus 2."


NO_ANSWER = " I have no earlier answer to work on."


@pytest.mark.parametrize(("follow_up", "asked"), [
    ("Add five to that.", "Add 5 to which number?"), ("Plus five.", "Add 5 to which number?"),
    ("What's that times three?", "Multiply which number by 3?"),
    ("Subtract 4 from that.", "Take 4 away from which number?"),
    ("Divide it by 2.", "Divide which number by 2?"), ("Double it.", "Multiply which number by 2?"),
    ("Square it.", "Which number?"),
])
def test_with_nothing_said_before_a_follow_up_asks_what_it_works_on(follow_up: str, asked: str) -> None:
    assert talk(follow_up) == [asked + NO_ANSWER]


@pytest.mark.parametrize("follow_up", ["Add five to that.", "Plus five.", "And divided by two?",
                                       "What's that times three?"])
def test_after_an_answer_that_was_not_a_number_the_llm_reads_a_follow_up(follow_up: str) -> None:
    """After the LLM's answer, a date or a conversion, "that" is not the math skill's."""
    assert talk("Who wrote Romeo and Juliet?", follow_up) == [None, None]
    assert talk("What's the date?", follow_up)[1] is None
    assert talk("How many miles is 10 kilometres?", follow_up)[1] is None


@pytest.mark.parametrize(("follow_up", "spoken"), [
    ("And in feet?", "10 kilometers is about 32808 feet."),
    ("How many meters is that?", "10 kilometers is 10000 meters."),
    ("What about 20 kilometres?", "20 kilometers is about 12 miles."),
    ("And 5 miles?", "5 miles is about 8 kilometers."),
    ("What about 3?", "3 kilometers is about 1.9 miles."),
])
def test_a_conversion_goes_on_from_the_last_one(follow_up: str, spoken: str) -> None:
    assert talk("How many miles is 10 kilometres?", follow_up) == [
        "10 kilometers is about 6.2 miles.", spoken]


def test_and_in_celsius_after_a_temperature_conversion() -> None:
    assert talk("What's 100 Fahrenheit in Kelvin?", "And in Celsius?")[1] == (
        "100 degrees Fahrenheit is about 38 degrees Celsius.")


@pytest.mark.parametrize("follow_up", ["And in feet?", "What about 20 kilometres?", "And in Celsius?"])
def test_a_conversion_follow_up_without_a_conversion_before_is_not_one(follow_up: str) -> None:
    assert talk(follow_up) == [None]
    assert talk("What is 12 times 7?", follow_up)[1] is None


def test_another_kind_of_unit_after_a_conversion_is_not_a_follow_up() -> None:
    assert talk("How many miles is 10 kilometres?", "What about 5 pounds?")[1] is None


@pytest.mark.parametrize(("first", "follow_ups", "spoken"), [
    ("What day is it today?", ["What about tomorrow?"],
     ["Tomorrow is Saturday, December 5th, 2026."]),
    ("What day is it today?", ["What about tomorrow?", "And the day after?"],
     ["Tomorrow is Saturday, December 5th, 2026.",
      "The day after tomorrow is Sunday, December 6th, 2026."]),
    ("What's the date?", ["And tomorrow?"], ["Tomorrow is Saturday, December 5th, 2026."]),
    ("What's the date?", ["And yesterday?"], ["Yesterday was Thursday, December 3rd, 2026."]),
    ("What's the date?", ["And next Friday?"], ["In 7 days it will be Friday, December 11th, 2026."]),
    ("What's the date?", ["What about Monday?"], ["In 3 days it will be Monday, December 7th, 2026."]),
    ("What day is it today?", ["And the day after?", "And the day after that?"],
     ["Tomorrow is Saturday, December 5th, 2026.",
      "The day after tomorrow is Sunday, December 6th, 2026."]),
])
def test_a_day_follow_up_after_a_date(first: str, follow_ups: list[str], spoken: list[str]) -> None:
    assert talk(first, *follow_ups)[1:] == spoken


@pytest.mark.parametrize("follow_up", ["And the day after?", "What about the day before?"])
def test_a_day_follow_up_without_a_day_before_is_not_one(follow_up: str) -> None:
    assert talk(follow_up) == [None]
    assert talk("What is 12 times 7?", follow_up)[1] is None
    assert talk("Who wrote Romeo and Juliet?", follow_up)[1] is None


@pytest.mark.parametrize("follow_up", ["When was he born?", "And what else did he write?",
                                       "What about his sister?", "And in what year?"])
def test_a_follow_up_on_an_llm_topic_is_left_to_the_llm(follow_up: str) -> None:
    assert talk("Who wrote Romeo and Juliet?", follow_up) == [None, None]


@pytest.mark.parametrize("follow_up", ["Add five to that.", "Plus five.", "What's that times three?"])
def test_the_question_back_is_not_an_echo_of_the_follow_up(follow_up: str) -> None:
    [asked] = talk(follow_up)
    assert asked is not None and not is_echo(asked, follow_up)


WEATHER = "What's the weather like today?"


@pytest.mark.parametrize(("follow_up", "refused"), [
    ("And tomorrow?", "I can't check the weather for tomorrow either: I work offline, with no internet."),
    ("What about the weekend?",
     "I can't check the weather for the weekend either: I work offline, with no internet."),
    ("And in Paris?", "I can't check the weather in Paris either: I work offline, with no internet."),
])
def test_a_follow_up_on_a_refusal_is_refused_in_its_own_words(follow_up: str, refused: str) -> None:
    first, second = talk(WEATHER, follow_up)
    assert second == refused
    assert first is not None and is_refusal(second) and not is_repeat(second, [first])


def test_a_follow_up_on_a_refusal_that_named_a_place_names_only_its_own() -> None:
    first, second = talk("What's the weather in Berlin?", "And in Paris?")
    assert first == "I can't check the weather in Berlin: I work offline, with no internet."
    assert second == "I can't check the weather in Paris either: I work offline, with no internet."


def test_a_refusal_cut_in_on_is_finished_by_the_words_said_over_it() -> None:
    """The turn ended at a thinking pause ("What is the weather light?" for "… like | in
    Paris today?"); the user went on over the refusal: what they said finishes it."""
    skills = server_skills()
    first = skills.answer("What is the weather light?", SkillContext(
        now=FRIDAY, monotonic=0.0, transcript="What is the weather light?"))
    assert first is not None and first.refusal
    cut_in_on = SkillContext(now=FRIDAY, monotonic=0.0, transcript="in Paris today?",
                             last=first.result, previous="I can't check the")
    went_on = skills.answer("in Paris today?", cut_in_on)
    assert went_on is not None and went_on.text == (
        "I can't check the weather in Paris today: I work offline, with no internet.")
    heard_whole = dataclasses.replace(cut_in_on, previous=first.text)
    after = skills.answer("in Paris today?", heard_whole)
    assert after is not None and after.text == (
        "I can't check the weather in Paris today either: I work offline, with no internet.")
    assert skills.answer("Tomorrow.", dataclasses.replace(heard_whole, transcript="Tomorrow.")) is None


def test_refusals_follow_one_another_from_the_first() -> None:
    assert talk(WEATHER, "And tomorrow?", "And in Paris?")[2] == (
        "I can't check the weather in Paris either: I work offline, with no internet.")


@pytest.mark.parametrize(("first", "follow_up"), [
    (WEATHER, "What about you?"), (WEATHER, "Tomorrow?"), ("What is 12 times 7?", "And tomorrow?"),
    ("Who wrote Romeo and Juliet?", "And in Paris?"),
])
def test_a_refusal_follow_up_needs_a_refusal_and_a_time_or_place_after_and(
    first: str, follow_up: str,
) -> None:
    assert talk(first, follow_up)[1] is None
    assert talk(follow_up) == [None]
