"""Wall-clock times as people say them ("7 am", "6:30 tomorrow", "half past 6", "noon"),
and the next moment that time occurs.

Input is text already through `words.to_digits` ("seven thirty" → "7 30"), so only digit
forms are matched here. Alarms and reminders turn the result into a monotonic due time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

_MERIDIEM = re.compile(r"(?<=\d) ?([ap])\.? ?m\b\.?")
_CLOCK = re.compile(
    r"(?<![\w.:])(?:"
    # "pass": Whisper's "past" before a number ("a quarter pass six").
    r"(?P<rel>half|quarter|(?P<mins>\d{1,2})(?: minutes?)?) (?P<dir>past|pass|after|to),?"
    r" (?P<h2>\d{1,2})"
    r"(?: ?(?P<mer2>am|pm)\b)?"
    # "615" / "0615": Whisper's "six fifteen" without its colon (a time only after "at",
    # "for"... or with am/pm: see _looks_like_time); "6.15": the British way.
    r"|(?P<hm>(?:[01]?\d|2[0-3])[0-5]\d)(?: ?(?P<mer3>am|pm)\b)?"
    r"|(?P<h>\d{1,2})(?::(?P<m>\d{2})|\.(?P<m4>[0-5]\d)| (?P<m2>[0-5]\d)\b| oh (?P<m3>\d)\b)?"
    r"(?: ?o'? ?clock)?(?: ?(?P<mer>am|pm)\b)?"
    r"|(?P<word>noon|midday|midnight)"
    r")(?![\w:])"
)
_MORNING = re.compile(r"\b(?:in the morning|this morning)\b")
_EVENING = re.compile(r"\b(?:tonight|in the (?:afternoon|evening)|this (?:afternoon|evening)|at night)\b")
_TOMORROW = re.compile(r"\btomorrow\b")


def fix_meridiem(digits: str) -> str:
    """ "7 a.m" / "7 a m" / "7am" → "7 am" (Whisper writes all of these)."""
    return _MERIDIEM.sub(lambda m: f" {m[1]}m", digits)


@dataclass(frozen=True, kw_only=True)
class ClockTime:
    """A spoken time of day; `hour` is 0-23 when the meridiem is known, else 1-12."""

    hour: int
    minute: int
    meridiem_known: bool
    tomorrow: bool
    start: int
    end: int


def find_clock(digits: str) -> ClockTime | None:
    """The first time of day in `digits` (through `to_digits` and `fix_meridiem`)."""
    for m in _CLOCK.finditer(digits):
        parsed = _from_match(m)
        if parsed is None or not _looks_like_time(m, digits):
            continue
        hour, minute, mer = parsed
        if mer is None:
            mer = "am" if _MORNING.search(digits) else "pm" if _EVENING.search(digits) else None
        if mer is not None and hour <= 12:
            hour = hour % 12 + (12 if mer == "pm" else 0)
        return ClockTime(
            hour=hour,
            minute=minute,
            meridiem_known=mer is not None or hour == 0 or hour > 12,
            tomorrow=bool(_TOMORROW.search(digits)),
            start=m.start(),
            end=m.end(),
        )
    return None


def _looks_like_time(m: re.Match[str], digits: str) -> bool:
    """A bare number ("buy 2 eggs") is a time only after "at", "for", "by", "until"."""
    if m["word"] or m["rel"] or m["mer"] or m["mer3"] or m["m"] or m["m2"] or m["m3"] or m["m4"]:
        return True
    return digits[: m.start()].endswith(_TIME_PREPOSITIONS)


_TIME_PREPOSITIONS = ("at ", "for ", "by ", "until ", "till ", "to ")


def _from_match(m: re.Match[str]) -> tuple[int, int, str | None] | None:
    """(hour, minute, "am"/"pm"/None) of one match, or None when out of range."""
    if m["word"]:
        return (12, 0, "pm") if m["word"] != "midnight" else (0, 0, "am")
    if m["rel"]:
        hour = int(m["h2"])
        offset = 30 if m["rel"] == "half" else 15 if m["rel"] == "quarter" else int(m["mins"])
        if m["dir"] == "to":
            hour, offset = (hour - 1) % 24, 60 - offset
        ok = 0 <= hour <= 23 and 0 <= offset < 60 and (m["rel"] != "half" or m["dir"] != "to")
        return (hour, offset, m["mer2"]) if ok else None
    if m["hm"]:
        hour, minute, mer = int(m["hm"][:-2]), int(m["hm"][-2:]), m["mer3"]
        if mer is None and m["hm"].startswith("0"):
            mer = "am"  # "0715": a 24-hour clock's morning
        return None if mer and not 1 <= hour <= 12 else (hour, minute, mer)
    hour = int(m["h"])
    minute = int(m["m"] or m["m4"] or m["m2"] or m["m3"] or 0)
    if m["mer"] and not 1 <= hour <= 12:
        return None
    if not (0 <= hour <= 23 and 0 <= minute <= 59):
        return None
    return hour, minute, m["mer"]


def next_occurrence(clock: ClockTime, now: datetime, *, prefer_morning: bool = False) -> datetime:
    """The next time after `now` the clock shows `clock` (tomorrow's when it says tomorrow).

    An hour said without am/pm ("alarm for 7") is whichever of 7:00 and 19:00 comes first,
    or the morning one when `prefer_morning` ("wake me up at 7").
    """
    hours = [clock.hour]
    if not clock.meridiem_known and clock.hour <= 12:
        hours = [clock.hour % 12] if prefer_morning else [clock.hour % 12, clock.hour % 12 + 12]
    first_day = now.date() + timedelta(days=1 if clock.tomorrow else 0)
    candidates = []
    for day in range(2):
        date = first_day + timedelta(days=day)
        for hour in hours:
            wall = datetime(date.year, date.month, date.day, hour, clock.minute, tzinfo=now.tzinfo)
            if wall.timestamp() > now.timestamp():
                candidates.append(wall)
        if candidates:
            break
    return min(candidates, key=lambda wall: wall.timestamp())


def say_clock(wall: datetime) -> str:
    """ "7 AM", "6:30 PM", "noon", "midnight": a time of day as Piper reads it well."""
    if wall.minute == 0 and wall.hour in (0, 12):
        return "midnight" if wall.hour == 0 else "noon"
    hour = wall.hour % 12 or 12
    suffix = "AM" if wall.hour < 12 else "PM"
    return f"{hour} {suffix}" if wall.minute == 0 else f"{hour}:{wall.minute:02d} {suffix}"


def say_day(wall: datetime, now: datetime) -> str:
    """ "" today, " tomorrow" tomorrow: the suffix an alarm reply needs."""
    return " tomorrow" if wall.date() > now.date() else ""
