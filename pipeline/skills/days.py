"""Follow-ups on a day the clock answered: "what day is it today?" → "and tomorrow?",
"and the day after?", "what about yesterday?".

The clock skill leaves the day it answered about as the turn's result (`day_result`); this
skill answers a bare day word only when that is the conversation's last result, so "and
tomorrow?" after a sum, a story or nothing at all is not taken for a date question (the
LLM reads it, with the exchange before it). "tomorrow" and "yesterday" count from today,
"the day after" from the day last answered about.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from pipeline.skills.base import LastResult, SkillContext, SkillReply
from pipeline.skills.phrasing import core

_FROM_TODAY = {"today": 0, "tomorrow": 1, "yesterday": -1, "the day after tomorrow": 2,
               "the day before yesterday": -2}
_FROM_LAST = {"the day after": 1, "the day after that": 1, "the next day": 1,
              "the following day": 1, "the day before": -1, "the day before that": -1,
              "the previous day": -1, "the week after": 7, "a week later": 7}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WHEN = "|".join(sorted([*_FROM_TODAY, *_FROM_LAST], key=len, reverse=True))
_FOLLOW_UP = re.compile(
    r"(?:(?:what |how )?about |so |then )?(?:what(?:'s| is| was| will be) |what day is )?"
    rf"(?:(?P<when>{_WHEN})|(?P<next>next |this )?(?P<weekday>{'|'.join(_WEEKDAYS)}))(?: then)?")


def day_result(kind: str, m: re.Match[str], now: datetime) -> LastResult | None:
    """The day a clock answer of `kind` was about, for a follow-up: today for "date" and
    "day", tomorrow or yesterday for "relative" (its match names which); None otherwise."""
    if kind in ("date", "day"):
        day = now.date()
    elif kind == "relative":
        day = now.date() + timedelta(days=1 if (m["rel"] or m["rel2"]) == "tomorrow" else -1)
    else:
        return None
    return LastResult(skill="clock", kind="day", topic=kind, day=day)


class DayFollowUp:
    """ "And tomorrow?" after the clock answered about a day; nothing otherwise."""

    name = "clock"

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        last = ctx.last
        if last is None or last.kind != "day" or last.day is None:
            return None
        m = _FOLLOW_UP.fullmatch(core(text))
        if m is None:
            return None
        when, today = m["when"] or m[0], ctx.now.date()
        if m["weekday"]:  # the coming one, as the clock counts "next Friday"
            ahead = (_WEEKDAYS.index(m["weekday"]) - today.weekday()) % 7
            day = today + timedelta(days=7 if ahead == 0 and m["next"] == "next " else ahead)
        elif when in _FROM_TODAY:
            day = today + timedelta(days=_FROM_TODAY[when])
        else:
            day = last.day + timedelta(days=_FROM_LAST[when])
        return SkillReply(text=say_day(day, today), skill=self.name,
                          result=LastResult(skill=self.name, kind="day", topic=when, day=day))


def say_day(day: date, today: date) -> str:
    """"Tomorrow is Saturday, December 5th, 2026.", "In 3 days it will be …"."""
    from pipeline.skills.clock import say_date  # here: the clock imports this module

    ahead = (day - today).days
    said = say_date(day)
    named = {0: "Today is", 1: "Tomorrow is", -1: "Yesterday was",
             2: "The day after tomorrow is", -2: "The day before yesterday was"}
    if ahead in named:
        return f"{named[ahead]} {said}."
    return f"In {ahead} days it will be {said}." if ahead > 0 else f"{-ahead} days ago it was {said}."
