"""Time and date from the local clock: "what time is it" → "It's 3:45 PM."

Everything is computed from `ctx.now` (timezone-aware local time), so a test can set the
clock. Only the local zone is known here: "what time is it in Tokyo" is not matched (the
whole request must match; pipeline/skills/world_clock.py answers it), nor is anything that
merely mentions time ("time flies").

How times are written for Piper: "3:45 PM" reads "three forty-five P M", but "3:05" reads
"three zero five", so minutes under ten are said "5 past 3 PM"; on the hour "3 PM";
"noon" and "midnight" by name. Dates use ordinals ("December 1st"), which Piper reads
as "December first".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from pipeline.skills.base import SkillContext, SkillReply
from pipeline.skills.days import day_result
from pipeline.skills.phrasing import core, digits
from pipeline.skills.soundalike import sounds_like
from pipeline.skills.speech import ordinal

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")


def _thanksgiving(year: int) -> date:
    """US Thanksgiving: the fourth Thursday of November."""
    first = date(year, 11, 1)
    return first + timedelta(days=(3 - first.weekday()) % 7 + 21)


_HOLIDAYS: dict[str, tuple[str, Callable[[int], date]]] = {
    r"christmas eve": ("Christmas Eve", lambda y: date(y, 12, 24)),
    r"christmas(?: day)?|xmas": ("Christmas", lambda y: date(y, 12, 25)),
    r"new year'?s eve": ("New Year's Eve", lambda y: date(y, 12, 31)),
    r"(?:the )?new year(?:'?s)?(?: day)?": ("New Year's Day", lambda y: date(y, 1, 1)),
    r"halloween": ("Halloween", lambda y: date(y, 10, 31)),
    r"valentine'?s(?: day)?": ("Valentine's Day", lambda y: date(y, 2, 14)),
    r"independence day|the 4th of july|july 4th": ("Independence Day", lambda y: date(y, 7, 4)),
    r"(?:st|saint) patrick'?s day": ("St. Patrick's Day", lambda y: date(y, 3, 17)),
    r"thanksgiving(?: day)?": ("Thanksgiving", _thanksgiving),
}
_HOLIDAY_PATTERNS = [(re.compile(p), name, day) for p, (name, day) in _HOLIDAYS.items()]
_HOLIDAY_SAID = {name.lower().replace("st. ", "saint "): (name, day)
                 for name, day in _HOLIDAYS.values()}
"""How each holiday is said, for one heard wrong in a noisy room ("thanks eating")."""

_MONTH_NAMES = "|".join(_MONTHS)
_DATE = re.compile(
    rf"(?:the )?(?:(?P<m1>{_MONTH_NAMES}) (?:the )?(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?"
    rf"|(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?(?: of)? (?P<m2>{_MONTH_NAMES}))"
)
_EVENT = r"(?P<event>[\w' ]+?)"


@dataclass(frozen=True, kw_only=True)
class _Event:
    """A day the user asked about: what to call it and when it next comes."""

    name: str
    day: date
    weekday_only: bool = False
    """A weekday ("Friday"): its name already says what day of the week it is."""


_WHEN = r"(?: this year| next year)?"
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(?:what time is it|what(?:'s| is) the (?:current )?time|(?:the )?(?:current )?"
                r"time|what time it is|do you have the time)(?: now| right now| here)?"), "time"),
    (re.compile(r"(?:what(?:'s| is) (?:the |today's )?date(?: today)?|what date is (?:it|today)"
                r"(?: today)?|today's date|the date)"), "date"),
    (re.compile(r"(?:what day is (?:it|today)(?: today)?|what(?:'s| is) (?:the )?day(?: today)?"
                r"|what day of the week is (?:it|today)|which day is (?:it|today))"), "day"),
    (re.compile(r"(?:what(?:'s| is| was) (?:the )?(?:date|day)(?: of the week)? "
                r"|what (?:date|day)(?: of the week)? (?:is|was|will it be) )"
                r"(?P<rel>tomorrow|yesterday)|what(?:'s| is| was) (?P<rel2>tomorrow|yesterday)'s date"),
     "relative"),
    (re.compile(r"what year is it(?: now)?|what(?:'s| is) the (?:current )?year|which year is it"),
     "year"),
    (re.compile(r"what month is it(?: now)?|what(?:'s| is) the (?:current )?month"), "month"),
    (re.compile(rf"(?:what|which) day(?: of the week)? (?:is|does|will|falls?|is it on) {_EVENT}"
                rf"(?: fall on| fall| be| on| land on)?{_WHEN}"), "weekday_of"),
    (re.compile(rf"(?:how (?:long|many days|many weeks|many sleeps) (?:is it |are there |left )?"
                rf"(?:until|till|til|to|before) ){_EVENT}"), "until"),
    (re.compile(rf"when is {_EVENT}{_WHEN}"), "when"),
    # "When is" heard wrong ("well, is thanksgiving this year", "when it …", "well, thanks
    # given this year": `core` takes the "well"): for a holiday only.
    (re.compile(rf"(?:when )?(?:(?:is|it|is it) )?{_EVENT} this year"), "holiday_when"),
]


_FOLLOW_UP = re.compile(r"(?:and |what about |how about )*(?P<rel>tomorrow|yesterday)(?P<rel2>)")
_ABOUT_A_DAY = re.compile(r"(?:today|tomorrow|yesterday) (?:is|was)|it's \w+day, ", re.I)
"""A reply about a day ("Today is Tuesday, …"): "and tomorrow?" after it asks the same of
tomorrow; after anything else the bare word is not the clock's."""


class ClockSkill:
    """The local time, today's date, weekdays, and days until a day or holiday."""

    name = "clock"

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        request = digits(core(text))
        if (m := _FOLLOW_UP.fullmatch(request)) and _ABOUT_A_DAY.match(ctx.previous):
            return SkillReply(text=_relative(m, ctx.now), skill=self.name,
                              result=day_result("relative", m, ctx.now))
        for pattern, kind in _PATTERNS:
            m = pattern.fullmatch(request)
            if m is not None:
                reply = _REPLIES[kind](m, ctx.now)
                if reply is not None:
                    return SkillReply(text=reply, skill=self.name,
                                      result=day_result(kind, m, ctx.now))
        return None


def say_time(now: datetime) -> str:
    """"3:45 PM", "3 PM", "5 past 3 PM", "noon", "midnight" (see the module docstring)."""
    hour, minute = now.hour, now.minute
    if minute == 0 and hour in (0, 12):
        return "midnight" if hour == 0 else "noon"
    half = "AM" if hour < 12 else "PM"
    h12 = hour % 12 or 12
    if minute == 0:
        return f"{h12} {half}"
    if minute < 10:
        past = "midnight" if hour == 0 else "noon" if hour == 12 else f"{h12} {half}"
        return f"{minute} {'minute past' if minute == 1 else 'past'} {past}"
    return f"{h12}:{minute:02d} {half}"


def say_date(day: date, *, year: bool = True) -> str:
    """"Tuesday, December 1st, 2026" (or without the year)."""
    text = f"{_weekday(day)}, {_MONTHS[day.month - 1].capitalize()} {ordinal(day.day)}"
    return f"{text}, {day.year}" if year else text


def _weekday(day: date) -> str:
    """The weekday's English name, whatever the process locale (strftime's %A is not)."""
    return _WEEKDAYS[day.weekday()].capitalize()


def _time(m: re.Match[str], now: datetime) -> str:
    return f"It's {say_time(now)}."


def _date(m: re.Match[str], now: datetime) -> str:
    return f"Today is {say_date(now.date())}."


def _day(m: re.Match[str], now: datetime) -> str:
    return f"It's {say_date(now.date(), year=False)}."


def _relative(m: re.Match[str], now: datetime) -> str:
    which = m["rel"] or m["rel2"]
    day = now.date() + timedelta(days=1 if which == "tomorrow" else -1)
    verb = "is" if which == "tomorrow" else "was"
    return f"{which.capitalize()} {verb} {say_date(day)}."


def _year(m: re.Match[str], now: datetime) -> str:
    return f"It's {now.year}."


def _month(m: re.Match[str], now: datetime) -> str:
    return f"It's {_MONTHS[now.month - 1].capitalize()}."


def _event(said: str, today: date) -> _Event | None:
    """The next day called `said` on or after `today`: a weekday, a holiday, or a date."""
    if said in ("weekend", "the weekend"):
        ahead = max(0, 5 - today.weekday())
        return _Event(name="The weekend", day=today + timedelta(days=ahead), weekday_only=True)
    weekday = said.removeprefix("next ").removeprefix("this ")
    if weekday in _WEEKDAYS:
        ahead = (_WEEKDAYS.index(weekday) - today.weekday()) % 7
        if ahead == 0 and said.startswith("next "):
            ahead = 7
        return _Event(name=weekday.capitalize(), day=today + timedelta(days=ahead), weekday_only=True)
    for pattern, name, make in _HOLIDAY_PATTERNS:
        if pattern.fullmatch(said):
            return _next(name, make, today)
    if (near := sounds_like(said, _HOLIDAY_SAID)) is not None:
        return _next(*_HOLIDAY_SAID[near], today)
    if (m := _DATE.fullmatch(said)) is not None:
        month_name = m["m1"] or m["m2"]
        month, day = _MONTHS.index(month_name) + 1, int(m["d1"] or m["d2"])
        try:
            date(2000, month, day)  # a leap year: February 29th is a date
        except ValueError:
            return None
        name = f"{month_name.capitalize()} {ordinal(day)}"
        return _next(name, lambda y: date(y, month, day), today)
    return None


def _next(name: str, make: Callable[[int], date], today: date) -> _Event | None:
    """The first such day on or after `today`; February 29th waits for a leap year."""
    for year in range(today.year, today.year + 9):
        try:
            day = make(year)
        except ValueError:
            continue
        if day >= today:
            return _Event(name=name, day=day)
    return None


def _weekday_of(m: re.Match[str], now: datetime) -> str | None:
    event = _event(m["event"], now.date())
    if event is None or event.weekday_only:
        return None
    weekday = _weekday(event.day)
    if event.day == now.date():
        return f"{event.name} is today, a {weekday}."
    year = "this year" if event.day.year == now.year else "next year"
    return f"{event.name} is on a {weekday} {year}."


def _until(m: re.Match[str], now: datetime) -> str | None:
    event = _event(m["event"], now.date())
    if event is None:
        return None
    return f"{event.name} is {_in_days((event.day - now.date()).days)}."


def _when(m: re.Match[str], now: datetime) -> str | None:
    event = _event(m["event"], now.date())
    if event is None or event.weekday_only:
        return None
    days = (event.day - now.date()).days
    if days <= 1:
        return f"{event.name} is {_in_days(days)}, {say_date(event.day, year=False)}."
    return f"{event.name} is on {say_date(event.day)}, {_in_days(days)}."


def _holiday_when(m: re.Match[str], now: datetime) -> str | None:
    """`_when`, only for a holiday: a misheard "when is" needs what follows to be one."""
    said = m["event"]
    if not any(p.fullmatch(said) for p, _, _ in _HOLIDAY_PATTERNS) and \
            sounds_like(said, _HOLIDAY_SAID) is None:
        return None
    return _when(m, now)


def _in_days(days: int) -> str:
    return "today" if days == 0 else "tomorrow" if days == 1 else f"in {days} days"


_REPLIES: dict[str, Callable[[re.Match[str], datetime], str | None]] = {
    "time": _time, "date": _date, "day": _day, "relative": _relative, "year": _year,
    "month": _month, "weekday_of": _weekday_of, "until": _until, "when": _when,
    "holiday_when": _holiday_when,
}
