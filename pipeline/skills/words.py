"""Numbers and durations as people say them, turned into floats a skill can compute with.

Whisper writes numbers either way ("10 minutes", "ten minutes", "twenty-five"), so every
skill first runs `to_digits` (text2num's `alpha2digit`) and then matches digits only.
Fractions spoken as words ("an hour and a half", "half an hour", "two and a half") are not
numbers to text2num, so the small grammar here adds them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from num2words import num2words
from text_to_num import alpha2digit

_HYPHEN = re.compile(r"(?<=[a-z0-9])-(?=[a-z])")
# text2num reads "a second" as the ordinal "a 2nd"; as a duration unit it must stay a word.
_SECOND = re.compile(r"\bsecond(s?)\b")
_SECOND_GUARD = "zsecondz"
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")


def to_digits(text: str) -> str:
    """`text` with number words written as digits ("twenty-five minutes" → "25 minutes").

    Lower-cases; joins hyphenated words ("fifteen-minute" → "15 minute"); keeps "second"
    (the unit) a word; converts even "one" and "two" (text2num skips them by default).
    """
    text = _HYPHEN.sub(" ", text.lower())
    text = _THOUSANDS.sub("", text)
    text = _SECOND.sub(_SECOND_GUARD + r"\1", text)
    text = alpha2digit(text, "en", threshold=0)
    return text.replace(_SECOND_GUARD, "second")


_NUM = r"\d+(?:\.\d+)?"
_FRACTION_WORDS = {"a half": 0.5, "a quarter": 0.25, "3 quarters": 0.75,
                   "half": 0.5, "the half": 0.5}
_FRACTION = r"(?:a half|a quarter|3 quarters)"
_PRE_FRACTION = r"(?:a half|a quarter|3 quarters|half|the half)"
"""Before a unit, also "1 and half hour" (Home Assistant's own phrasing) and Whisper's "1 and
the half hour"."""
_NUMBER = re.compile(
    rf"^(?P<neg>minus |negative |-)?(?:an? )?(?P<int>{_NUM})(?: and (?P<frac>{_FRACTION}))?$"
)
_BARE_FRACTION = re.compile(r"^(?:a |one )?(?P<frac>half|quarter|3 quarters)$")
_RATIO = re.compile(r"^(?P<num>\d+)/(?P<den>\d+)$")


def parse_number(text: str) -> float | None:
    """The number `text` is as a whole ("ten", "2.5", "two and a half", "a hundred",
    "minus 5", "1,000", "3/4", "half"), or None when it is not just a number."""
    words = " ".join(to_digits(text.strip()).split()).rstrip(".")
    if m := _NUMBER.match(words):
        value = float(m["int"]) + (_FRACTION_WORDS[m["frac"]] if m["frac"] else 0.0)
        return -value if m["neg"] else value
    if m := _BARE_FRACTION.match(words):
        return {"half": 0.5, "quarter": 0.25, "3 quarters": 0.75}[m["frac"]]
    if (m := _RATIO.match(words)) and int(m["den"]) != 0:
        return int(m["num"]) / int(m["den"])
    if words in ("a dozen", "dozen"):
        return 12.0
    return None


_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_UNIT_WORDS = r"sec(?:ond)?s?|min(?:ute)?s?|hours?|hrs?|days?"
_UNIT = rf"(?P<unit>{_UNIT_WORDS})"
_QTY = rf"(?P<qty>{_NUM}|an?|a couple(?: of)?)"
_COMPONENT = re.compile(
    rf"(?<![\w.])(?:{_QTY} (?:and (?P<pre>{_PRE_FRACTION}) )?{_UNIT}(?: and (?P<post>a half|a quarter))?\b"
    rf"|(?:a |1/2 )?half (?:an? )?(?P<half>{_UNIT_WORDS})\b|1/2 (?:an? )?(?P<half2>{_UNIT_WORDS})\b"
    rf"|(?:a |1 |(?P<three>3) )?(?P<quarter>quarters?) (?:of )?(?:an? )?hour\b)"
)
_JOIN = re.compile(r"(?:,? and |, | )")


def _unit_seconds(unit: str) -> float:
    return _UNIT_SECONDS["h" if unit.startswith("h") else unit[0]]


def _component_seconds(m: re.Match[str]) -> float:
    if m["quarter"]:
        return 2700.0 if m["three"] else 900.0
    if m["half"] or m["half2"]:
        return _unit_seconds(m["half"] or m["half2"]) / 2
    unit = _unit_seconds(m["unit"])
    qty = m["qty"]
    count = 1.0 if qty in ("a", "an") else 2.0 if qty.startswith("a couple") else float(qty)
    for frac in (m["pre"], m["post"]):
        if frac:
            count += _FRACTION_WORDS[frac]
    return count * unit


@dataclass(frozen=True, kw_only=True)
class Duration:
    """A spoken duration found in a digit-converted text: its length and where it is."""

    seconds: float
    start: int
    end: int


def find_duration(digits: str) -> Duration | None:
    """The first duration in `digits` (text already through `to_digits`): "10 minutes",
    "1 hour and 30 minutes", "an hour and a half", "half an hour", "15 minute"."""
    m = _COMPONENT.search(digits)
    if m is None:
        return None
    seconds, end = _component_seconds(m), m.end()
    while (join := _JOIN.match(digits, end)) and (
        nxt := _COMPONENT.match(digits, join.end())
    ):
        seconds, end = seconds + _component_seconds(nxt), nxt.end()
    return Duration(seconds=seconds, start=m.start(), end=end)


def parse_duration(text: str) -> float | None:
    """Seconds in `text` when it is, as a whole, a duration ("ten minutes", "90 seconds",
    "an hour and a half", "1 hour and 30 minutes", "half an hour"); else None."""
    digits = " ".join(to_digits(text.strip()).split()).rstrip(".")
    found = find_duration(digits)
    if found is None or found.start != 0 or found.end != len(digits):
        return None
    return found.seconds


def _plural(count: int, unit: str) -> str:
    return f"{count} {unit}" if count == 1 else f"{count} {unit}s"


def say_duration(seconds: float) -> str:
    """A duration as Piper should say it: "8 minutes", "a minute and a half",
    "2 and a half hours", "1 hour and 5 minutes", "45 seconds"."""
    total = round(seconds)
    if total < 60:
        return _plural(total, "second")
    if total < 3600:
        return _say_pair(*divmod(total, 60), big="minute", small="second")
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if secs:  # "1 hour, 5 minutes and 30 seconds": a confirmation keeps every part
        parts = [_plural(hours, "hour")] + ([_plural(minutes, "minute")] if minutes else [])
        return ", ".join(parts) + f" and {_plural(secs, 'second')}"
    return _say_pair(hours, minutes, big="hour", small="minute")


def _say_pair(big_count: int, small_count: int, *, big: str, small: str) -> str:
    if small_count == 0:
        return _plural(big_count, big)
    if small_count == 30:
        article = "an" if big == "hour" else "a"
        return f"{article} {big} and a half" if big_count == 1 else f"{big_count} and a half {big}s"
    return f"{_plural(big_count, big)} and {_plural(small_count, small)}"


def say_remaining(seconds: float) -> str:
    """Time left, rounded as people say it: seconds under a minute, then minutes and
    seconds to the nearest 10 s, then hours and minutes."""
    total = max(0, round(seconds))
    if total < 60:
        return _plural(total, "second")
    if total < 3600:
        minutes, secs = divmod(round(total / 10) * 10, 60)
        if minutes == 60:
            return "1 hour"
        return _plural(minutes, "minute") + (f" and {_plural(secs, 'second')}" if secs else "")
    hours, minutes = divmod(round(total / 60), 60)
    return _plural(hours, "hour") + (f" and {_plural(minutes, 'minute')}" if minutes else "")


def article_for(number: float) -> str:
    """ "an" before a number spoken with a vowel ("an 8 minute timer", "an 11"), else "a"."""
    return "an" if num2words(int(number)).startswith(("eight", "eleven")) else "a"


def join_words(items: list[str], last: str = "and") -> str:
    """ "eggs", "eggs and butter", "eggs, butter and milk": a list as it is read out
    (`last="or"`: "eggs, butter or milk", the "and" inside an item left alone)."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {last} " + items[-1]
