"""Numbers, durations and clock times as Whisper writes them, and how they are spoken back."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from pipeline.skills.when import find_clock, fix_meridiem, next_occurrence, say_clock
from pipeline.skills.words import (
    article_for,
    join_words,
    parse_duration,
    parse_number,
    say_duration,
    say_remaining,
    to_digits,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [("ten", 10), ("2.5", 2.5), ("two and a half", 2.5), ("a hundred", 100), ("minus 5", -5),
     ("1,000", 1000), ("3/4", 0.75), ("half", 0.5), ("one", 1), ("twenty-five", 25),
     ("one point five", 1.5), ("a dozen", 12)],
)
def test_parse_number_reads_digits_and_words(text: str, value: float) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["pasta", "12 apples", "", "3/0"])
def test_parse_number_is_none_for_what_is_not_just_a_number(text: str) -> None:
    assert parse_number(text) is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("ten minutes", 600), ("1 hour and 30 minutes", 5400), ("an hour and a half", 5400),
     ("90 seconds", 90), ("half an hour", 1800), ("a minute and a half", 90),
     ("two and a half hours", 9000), ("fifteen-minute", 900), ("a second", 1),
     ("a quarter of an hour", 900), ("three quarters of an hour", 2700),
     ("2 hours 15 minutes and 5 seconds", 8105), ("1.5 hours", 5400), ("a couple of minutes", 120)],
)
def test_parse_duration_reads_spoken_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["pasta", "10", "10 minutes and 3 apples", "minutes"])
def test_parse_duration_is_none_unless_the_whole_text_is_a_duration(text: str) -> None:
    assert parse_duration(text) is None


def test_to_digits_keeps_the_unit_second_a_word() -> None:
    assert to_digits("a second and twenty-five minutes") == "a second and 25 minutes"


@pytest.mark.parametrize(
    ("seconds", "spoken"),
    [(8, "8 seconds"), (60, "1 minute"), (90, "a minute and a half"), (150, "2 and a half minutes"),
     (200, "3 minutes and 20 seconds"), (5400, "an hour and a half"), (3900, "1 hour and 5 minutes"),
     (7200, "2 hours")],
)
def test_say_duration_speaks_naturally(seconds: float, spoken: str) -> None:
    assert say_duration(seconds) == spoken


@pytest.mark.parametrize(
    ("seconds", "spoken"),
    [(44.6, "45 seconds"), (203, "3 minutes and 20 seconds"), (596, "10 minutes"),
     (3596, "1 hour"), (3929, "1 hour and 5 minutes"), (-3, "0 seconds")],
)
def test_say_remaining_rounds_as_people_do(seconds: float, spoken: str) -> None:
    assert say_remaining(seconds) == spoken


def test_article_and_joining_read_well() -> None:
    assert [article_for(n) for n in (8, 10, 11, 18, 80, 1)] == ["an", "a", "an", "an", "an", "a"]
    assert join_words(["eggs"]) == "eggs"
    assert join_words(["eggs", "butter", "milk"]) == "eggs, butter and milk"


@pytest.mark.parametrize(
    ("text", "hour", "minute"),
    [("at 7 a.m.", 7, 0), ("for 6:30 pm", 18, 30), ("half past 6", 6, 30), ("quarter to 7", 6, 45),
     ("ten past 6 pm", 18, 10), ("at noon", 12, 0), ("at midnight", 0, 0), ("for 19:00", 19, 0),
     ("at 6 oh 5 am", 6, 5), ("at seven thirty in the evening", 19, 30), ("at 7 o'clock", 7, 0)],
)
def test_find_clock_reads_times_of_day(text: str, hour: int, minute: int) -> None:
    clock = find_clock(fix_meridiem(to_digits(text)))
    assert clock is not None and (clock.hour, clock.minute) == (hour, minute)


def test_a_bare_number_is_not_a_time_unless_introduced_by_at_or_for() -> None:
    assert find_clock("buy 2 eggs") is None
    assert find_clock("buy 2 eggs at 5") is not None


def test_next_occurrence_is_today_if_ahead_else_tomorrow() -> None:
    now = datetime(2024, 5, 1, 8, 0, tzinfo=ZoneInfo("Europe/London"))
    nine = find_clock("at 9 am")
    seven = find_clock("at 7 am")
    assert nine is not None and seven is not None
    assert next_occurrence(nine, now).day == 1
    assert next_occurrence(seven, now).day == 2
    assert say_clock(next_occurrence(seven, now)) == "7 AM"
