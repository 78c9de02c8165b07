"""MathSkill: spoken arithmetic answered exactly; anything not a sum is left to the LLM."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from pipeline.skills.base import LastResult, SkillContext, normalise
from pipeline.skills.math import MathSkill
from pipeline.skills.speech import counted, ordinal, say_estimate, say_number

CTX = SkillContext(now=datetime(2026, 12, 1, 15, 45, tzinfo=UTC), monotonic=0.0)
SKILL = MathSkill()


def ask(transcript: str) -> str | None:
    reply = SKILL.answer(normalise(transcript), CTX)
    if reply is not None:
        assert reply.skill == "math" and not reply.refusal and reply.action is None
    return None if reply is None else reply.text


@pytest.mark.parametrize(("transcript", "spoken"), [
    ("What's fifteen percent of eighty?", "15 percent of 80 is 12."),
    ("what is 12 times 7", "12 times 7 is 84."),
    ("What's 144 divided by 12?", "144 divided by 12 is 12."),
    ("two plus two", "2 plus 2 is 4."),
    ("What is 3 to the power of 4?", "3 to the power of 4 is 81."),
    ("square root of 81", "The square root of 81 is 9."),
    ("What's 20% off 50 dollars?", "20 percent off 50 dollars is 40 dollars."),
    ("What is a third of 90?", "A third of 90 is 30."),
    ("17 minus 9", "17 minus 9 is 8."),
    ("What's 7 squared?", "7 squared is 49."),
])
def test_the_briefs_phrasings_get_the_exact_answer(transcript: str, spoken: str) -> None:
    assert ask(transcript) == spoken


@pytest.mark.parametrize(("transcript", "spoken"), [
    ("what is twelve times seven", "12 times 7 is 84."),
    ("what is seventeen minus nine", "17 minus 9 is 8."),
    ("what's one hundred and forty four divided by twelve", "144 divided by 12 is 12."),
    ("what is two thirds of ninety", "2 thirds of 90 is 60."),
    ("what is three to the power of four", "3 to the power of 4 is 81."),
    ("what is the square root of eighty one", "The square root of 81 is 9."),
    ("what's twenty percent off fifty dollars", "20 percent off 50 dollars is 40 dollars."),
])
def test_numbers_said_as_words_compute_like_digits(transcript: str, spoken: str) -> None:
    assert ask(transcript) == spoken


@pytest.mark.parametrize(("transcript", "spoken"), [
    ("17-9", "17 minus 9 is 8."),
    ("what's 6 x 7", "6 times 7 is 42."),
    ("what's 1,000 times 3", "1000 times 3 is 3000."),
    ("what does 2 plus 2 equal", "2 plus 2 is 4."),
    ("can you tell me what 6 times 7 is please", "6 times 7 is 42."),
    ("half of 50", "Half of 50 is 25."),
    ("three quarters of a hundred", "3 quarters of 100 is 75."),
    ("what's 10 to the 3rd power", "10 to the power of 3 is 1000."),
    ("what's 2 plus 3 times 4", "2 plus 3 times 4 is 14."),
    ("what's a 15 percent tip on 40 dollars", "A 15 percent tip on 40 dollars is 6 dollars."),
    ("what is the cube root of 27", "The cube root of 27 is 3."),
    ("what is 5 minus 8", "5 minus 8 is minus 3."),
])
def test_other_ways_of_saying_a_sum(transcript: str, spoken: str) -> None:
    assert ask(transcript) == spoken


def test_a_result_that_is_not_whole_is_rounded_and_says_about() -> None:
    assert ask("what's 100 divided by 7") == "100 divided by 7 is about 14.29."
    assert ask("what is 0.1 plus 0.2") == "0.1 plus 0.2 is 0.3."


def test_halves_are_said_in_words_because_piper_says_point_five() -> None:
    assert ask("what's 7 divided by 2") == "7 divided by 2 is three and a half."


def test_money_is_said_in_dollars_and_cents() -> None:
    assert ask("what is 10 divided by 3 dollars") == (
        "10 divided by 3 dollars is about 3 dollars and 33 cents.")
    assert ask("what's 25 percent off 10 dollars") == (
        "25 percent off 10 dollars is 7 dollars and 50 cents.")


def test_division_by_zero_is_explained_not_computed() -> None:
    assert ask("what's 5 divided by 0") == "That's undefined: you can't divide by zero."


def test_huge_powers_are_refused_before_they_are_computed() -> None:
    started = time.perf_counter()
    assert ask("what is 9 to the power of 9 to the power of 9") == (
        "That number is too big for me to say.")
    assert ask("what's 10 to the power of 20") == "That number is too big for me to say."
    assert time.perf_counter() - started < 0.05


def test_the_root_of_a_negative_number_has_no_real_answer() -> None:
    assert ask("square root of minus 4") == "That has no answer in real numbers."


@pytest.mark.parametrize("transcript", [
    "what is the meaning of life", "what is love", "what's the capital of France",
    "times square", "plus size clothing", "what's 5 5", "what's 10 percent", "what is 5",
    "what is 5 plus", "what is 5 miles in kilometers", "tell me a joke", "what's over 9000",
    "one plus one equals two is a song", "what time is it",
])
def test_near_misses_are_declined_for_the_llm(transcript: str) -> None:
    assert ask(transcript) is None


@pytest.mark.parametrize(("value", "spoken"), [
    (12.0, "12"), (1234567.0, "1234567"), (-3.0, "minus 3"), (0.3, "0.3"), (3.14, "3.14"),
    (100 / 7, "about 14.29"), (1 / 3, "about 0.33"), (2.5, "two and a half"), (0.5, "a half"),
    (0.75, "three quarters"), (-1.25, "minus one and a quarter"), (2.499, "about two and a half"),
    (0.001234, "about 0.0012"), (1500.5, "1500.5"), (0.1 + 0.2, "0.3"), (1e15, "1000000000000000"),
])
def test_say_number_rounding_rules(value: float, spoken: str) -> None:
    assert say_number(value) == spoken


@pytest.mark.parametrize(("value", "spoken"), [
    (21.111, "about 21"), (8.0467, "about 8"), (6.2137, "about 6.2"), (0.4732, "about 0.47"),
    (236.588, "about 237"), (1000.0, "1000"), (1.5, "one and a half"), (-6.667, "about minus 6.7"),
])
def test_say_estimate_keeps_two_figures_below_ten_and_whole_numbers_above(
    value: float, spoken: str
) -> None:
    assert say_estimate(value) == spoken


def test_ordinals_and_counted_nouns() -> None:
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"]
    assert counted(1, "day") == "1 day"
    assert counted(3, "day") == "3 days"
    assert counted(2, "foot", "feet") == "2 feet"


def test_two_hundred_answers_take_under_a_second_after_the_first() -> None:
    phrasings = ["what's fifteen percent of eighty", "what is 12 times 7", "times square",
                 "what's 20% off 50 dollars", "what is the meaning of life"]
    ask(phrasings[0])
    started = time.perf_counter()
    for i in range(200):
        ask(phrasings[i % len(phrasings)])
    assert time.perf_counter() - started < 1.0


def test_a_follow_up_about_that_uses_the_number_of_the_last_answer() -> None:
    last = SKILL.answer(normalise("12 times 12"), CTX)
    assert last is not None and last.result is not None and last.result.value == 144
    reply = MathSkill().answer(normalise("And what is that divided by four?"),
                               replace(CTX, last=last.result))
    assert reply is not None and reply.text == "144 divided by 4 is 36."


def test_a_reference_after_an_answer_that_was_not_a_number_is_not_arithmetic() -> None:
    """"That" after the LLM's answer (no number the conversation kept) is the LLM's to read,
    even when its words held a number."""
    topic = LastResult(skill="llm", kind="topic", topic="How tall is the Eiffel Tower?")
    reply = MathSkill().answer(normalise("What is that divided by four?"),
                               replace(CTX, previous="It is 330 meters tall.", last=topic))
    assert reply is None
