"""ClockSkill: the time and date from ctx.now, said the way Piper reads well."""

from __future__ import annotations

import time
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from pipeline.skills.base import SkillContext, normalise
from pipeline.skills.clock import ClockSkill, say_time

ZONE = ZoneInfo("America/New_York")
TUESDAY = datetime(2026, 12, 1, 15, 45, tzinfo=ZONE)
SKILL = ClockSkill()


def ask(transcript: str, now: datetime = TUESDAY) -> str | None:
    reply = SKILL.answer(normalise(transcript), SkillContext(now=now, monotonic=0.0))
    if reply is not None:
        assert reply.skill == "clock" and not reply.refusal and reply.action is None
    return None if reply is None else reply.text


@pytest.mark.parametrize("transcript", [
    "What time is it?", "what's the time", "what is the time now", "can you tell me the time please",
    "do you know what time it is", "time", "whats the time",
])
def test_the_time_is_the_local_clock(transcript: str) -> None:
    assert ask(transcript) == "It's 3:45 PM."


@pytest.mark.parametrize(("hour", "minute", "spoken"), [
    (15, 45, "3:45 PM"), (9, 30, "9:30 AM"), (15, 0, "3 PM"), (12, 0, "noon"), (0, 0, "midnight"),
    (15, 5, "5 past 3 PM"), (15, 1, "1 minute past 3 PM"), (0, 5, "5 past midnight"),
    (12, 30, "12:30 PM"), (0, 30, "12:30 AM"),
])
def test_times_are_written_so_piper_reads_them_naturally(hour: int, minute: int, spoken: str) -> None:
    """Piper reads "3:05" as "three zero five", so minutes under ten are "5 past 3"."""
    assert say_time(TUESDAY.replace(hour=hour, minute=minute)) == spoken


def test_the_time_follows_the_zone_of_ctx_now() -> None:
    tokyo = TUESDAY.astimezone(ZoneInfo("Asia/Tokyo"))
    assert ask("what time is it", tokyo) == "It's 5:45 AM."


@pytest.mark.parametrize(("transcript", "spoken"), [
    ("What's the date today?", "Today is Tuesday, December 1st, 2026."),
    ("what is today's date", "Today is Tuesday, December 1st, 2026."),
    ("What day is it?", "It's Tuesday, December 1st."),
    ("What's the date tomorrow?", "Tomorrow is Wednesday, December 2nd, 2026."),
    ("what day was yesterday", "Yesterday was Monday, November 30th, 2026."),
    ("What year is it?", "It's 2026."),
    ("what month is it", "It's December."),
])
def test_dates_are_said_with_weekday_and_ordinal(transcript: str, spoken: str) -> None:
    assert ask(transcript) == spoken


@pytest.mark.parametrize(("transcript", "spoken"), [
    ("What day of the week is Christmas?", "Christmas is on a Friday this year."),
    ("what day does christmas fall on this year", "Christmas is on a Friday this year."),
    ("what day of the week is new year's day", "New Year's Day is on a Friday next year."),
    ("what day is december 25th", "December 25th is on a Friday this year."),
])
def test_the_weekday_of_a_holiday_or_date(transcript: str, spoken: str) -> None:
    assert ask(transcript) == spoken


@pytest.mark.parametrize(("transcript", "spoken"), [
    ("How long until Friday?", "Friday is in 3 days."),
    ("how many days until wednesday", "Wednesday is tomorrow."),
    ("how many days until next tuesday", "Tuesday is in 7 days."),
    ("How many days until Christmas?", "Christmas is in 24 days."),
    ("how many days until new year", "New Year's Day is in 31 days."),
    ("how many days till halloween", "Halloween is in 334 days."),
    ("how many days until the fourth of july", "Independence Day is in 215 days."),
    ("how long until the weekend", "The weekend is in 4 days."),
    ("when is christmas", "Christmas is on Friday, December 25th, 2026, in 24 days."),
    ("when is thanksgiving", "Thanksgiving is on Thursday, November 25th, 2027, in 359 days."),
])
def test_days_until_a_day_count_from_today(transcript: str, spoken: str) -> None:
    assert ask(transcript) == spoken


def test_a_day_already_passed_this_year_is_next_years() -> None:
    boxing_day = datetime(2026, 12, 26, 9, 0, tzinfo=ZONE)
    assert ask("how many days until christmas", boxing_day) == "Christmas is in 364 days."
    assert ask("how many days until christmas", boxing_day.replace(day=25)) == "Christmas is today."


def test_february_29th_waits_for_a_leap_year() -> None:
    assert ask("how many days until february 29th") == "February 29th is in 455 days."
    assert ask("when is february 30th") is None


@pytest.mark.parametrize("transcript", [
    "what's the time difference to Tokyo", "what time is it in tokyo", "time flies",
    "what time does the pharmacy close", "what is time", "how long until my timer ends",
    "when is my dentist appointment", "what day is my birthday", "how long is a day on mars",
    "what's the date of the battle of hastings",
])
def test_near_misses_are_declined(transcript: str) -> None:
    assert ask(transcript) is None


def test_two_hundred_answers_take_under_a_second_after_the_first() -> None:
    phrasings = ["what time is it", "what's the date today", "how many days until christmas",
                 "time flies", "what day of the week is christmas"]
    ask(phrasings[0])
    started = time.perf_counter()
    for i in range(200):
        ask(phrasings[i % len(phrasings)])
    assert time.perf_counter() - started < 1.0


def test_and_tomorrow_after_the_date_is_tomorrows_date() -> None:
    ctx = SkillContext(now=TUESDAY, monotonic=0.0, previous="Today is Tuesday, December 1st, 2026.")
    reply = ClockSkill().answer(normalise("And tomorrow?"), ctx)
    assert reply is not None and reply.text == "Tomorrow is Wednesday, December 2nd, 2026."


def test_and_tomorrow_after_something_else_is_not_the_clocks() -> None:
    ctx = SkillContext(now=TUESDAY, monotonic=0.0, previous="It will be sunny, I think.")
    assert ClockSkill().answer(normalise("And tomorrow?"), ctx) is None
