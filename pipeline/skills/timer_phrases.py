"""What a timer, alarm or reminder request asks for, read from the words people use.

Pure parsing over text already through `words.to_digits` and `when.fix_meridiem`; the
skill in `timers.py` turns an intent into a reply and an action. Each pattern keys on the
meaning-bearing words ("timer" + a duration + a set verb) so that Whisper's punctuation
and small slips do not matter, and a question *about* timers ("what is a timer", "who
invented the alarm clock") matches nothing and goes to the LLM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.skills.soundalike import rhymes_with_wake
from pipeline.skills.timer_store import Kind
from pipeline.skills.when import ClockTime, find_clock
from pipeline.skills.words import Duration, find_duration


@dataclass(frozen=True, kw_only=True)
class Target:
    """Which running timers a question or a cancel is about (all None: any of them)."""

    kind: Kind | None = None
    name: str | None = None
    seconds: float | None = None
    every: bool = False


@dataclass(frozen=True, kw_only=True)
class SetTimer:
    kind: Kind
    seconds: float | None = None
    """Relative: due this many seconds from now."""
    clock: ClockTime | None = None
    """Absolute: due at the next occurrence of this time of day."""
    name: str | None = None
    task: str = ""
    """A reminder's words ("call your mom"), already turned to the listener's point of view."""
    connector: str = "to"
    """How the task follows "I'll remind you": "to", "about", "that"."""
    prefer_morning: bool = False


@dataclass(frozen=True, kw_only=True)
class ListTimers:
    kind: Kind | None = None


@dataclass(frozen=True, kw_only=True)
class Remaining:
    target: Target


@dataclass(frozen=True, kw_only=True)
class Cancel:
    target: Target


@dataclass(frozen=True, kw_only=True)
class AskWhen:
    """A set request with no duration or time ("set a timer"): ask, change nothing."""

    kind: Kind


Intent = SetTimer | ListTimers | Remaining | Cancel | AskWhen

GATE = re.compile(
    r"\b(?:timers?|alarms?|reminds?|reminders?|wake|get me up|how long|how much|time (?:left|for))\b"
)
_POLITE = re.compile(
    r"^(?:(?:hey|hi|ok|okay|so|um|uh|please|can you|could you|would you|will you|just|"
    r"i need you to|i want you to|go ahead and|and|now)\b ?)+"
)
_KIND = re.compile(r"\b(timer|alarm|reminder)s?\b")
_LIST = re.compile(
    r"^(?:(?:what|which|how many|list|show me|show|tell me|read me|read)(?: are| is)?(?: all)?"
    r"(?: of)?(?: my| the)? (?:timers|alarms|reminders)\b"
    r"|(?:do|have) i (?:have|got|set) (?:any|a|an) (?:timers?|alarms?|reminders?)\b"
    r"|(?:are there|is there|any) (?:any |a |an )?(?:timers?|alarms?|reminders?)"
    r"(?: (?:running|set|going|on|active))?$)"
)
_CANCEL = re.compile(
    r"^(?:cancel|stop|delete|remove|clear|turn off|switch off|dismiss|kill|end|abort|"
    r"silence|disable|get rid of|forget|never mind)\b(?P<rest>.*)$"
)
_REMAIN = re.compile(
    r"\bhow (?:long|much (?:time|longer)|many (?:minutes|seconds|hours))\b"
    r"|\btime (?:is )?(?:left|remaining)\b|^when (?:is|will|does|do)\b"
)
_REMAIN_BARE = re.compile(
    r"^(?:how (?:long|much (?:time|longer))|(?:how much )?time)"
    r"(?: is| do i have| have i got| do we have)?(?: left| remaining| to go)?(?: on it)?$"
)
_REMAIN_WORDS = re.compile(
    r"\b(?:left|remaining|to go|until|till|before|go(?:es)? off|ring|done|finish|longer)"
)
_WHEN = re.compile(r"^(?:when(?:'s| is| will| does)|what time (?:is|will|does)) (?:my|the)\b")
_DAY_WORDS = re.compile(
    r"\s*\b(?:tomorrow|today|tonight|this (?:morning|afternoon|evening)"
    r"|in the (?:morning|afternoon|evening)|at night)\b"
)
_REMIND = re.compile(r"\breminds? me\b|\b(?:set|create|add|make) (?:a |an )?reminder\b|^reminder\b")
_TASK = re.compile(r"\b(?:reminds? me|reminder)(?: (?P<conn>to|about|that|of|for))? (?P<task>.+)$")
_ALARM = re.compile(
    r"\bwake me\b|\bget me up\b|^(?:set|create|make|add|schedule|put|start)\b.{0,20}\balarm\b"
    r"|^alarm\b|\balarm (?:at|for)\b"
)
_SET_VERB = re.compile(r"^(?:set|start|create|make|add|put on|put|begin|run|give me|i need|i want)\b")
_TIMER_WORD = re.compile(r"\btimers?\b|^(?:set|start) (?:a|an|the) time for\b")
_TIMER_FIRST = re.compile(r"^(?:a |an |another |new )?timers?\b")
_TIMER_AFTER = re.compile(r"^\s*timers?\b")
_MISHEARD_SET = re.compile(
    r"^(?!(?:is|are|was|what|which|how|my|your|the|no|not|any|that|this)\b)[a-z]+"
    r" (?:a |an |the )?timers? for\b")
"""One word, then "timer for": the "set a" heard wrong ("center timer for 10 minutes")."""
_NAME_AFTER = re.compile(
    r"\b(?:timer|alarm|reminder) (?:for|called|named|labell?ed|about|to) (?:the |my |a |an |some )?"
    r"(?P<name>[a-z' ]+?)$"
)
_NAME_BEFORE = re.compile(r"\b(?:a|an|the|my|that|this) (?P<name>[a-z' ]+?) (?:timer|alarm|reminder)s?\b")
_NOT_NAMES = frozenset(
    "new another second 2nd first last current next other quick kitchen countdown one more "
    "minute hour second running active".split()
)
_LEAD_IN = ("in ", "for ", "after ", "of ", "at ", "by ", "about ")
_POV = {"my": "your", "me": "you", "i": "you", "i'm": "you're", "myself": "yourself",
        "mine": "yours", "i've": "you've", "i'll": "you'll", "am": "are", "we": "you", "our": "your"}


_WAKE_LIKE = re.compile(r"^(?P<verb>[a-z]+)(?= me up (?:at|for|in|by) )")


def wake_misheard(text: str) -> str:
    """"Wait me up at a quarter past six" (a noisy room's "wake"): a word on the vowel of
    "wake" before "me up at …" is "wake" (`soundalike.rhymes_with_wake`); "pick me up
    at six" is not."""
    m = _WAKE_LIKE.match(text)
    if m is None or m["verb"] == "wake" or not rhymes_with_wake(m["verb"]):
        return text
    return "wake" + text[m.end():]


def parse(digits: str) -> Intent | None:
    """The request in `digits`, or None when it is not a timer/alarm/reminder request."""
    text = _POLITE.sub("", digits).strip()
    if _LIST.search(text):
        return ListTimers(kind=_kind(text))
    if m := _CANCEL.match(text):
        return Cancel(target=_target(m["rest"])) if _KIND.search(m["rest"]) else None
    if _is_remaining(text):
        return Remaining(target=_target(text))
    if _REMIND.search(text):
        return _reminder(text)
    if _ALARM.search(text):
        return _alarm(text)
    if _TIMER_WORD.search(text):
        return _timer(text)
    return None


def _is_remaining(text: str) -> bool:
    """ "how long is left on the pasta timer", "how much time is left", "when is my alarm";
    not "how long is a timer" nor "how much time is left until christmas"."""
    if _REMAIN_BARE.match(text):
        return True
    if not _KIND.search(text):
        return False
    return bool(_WHEN.match(text) or (_REMAIN.search(text) and _REMAIN_WORDS.search(text)))


def _kind(text: str) -> Kind | None:
    m = _KIND.search(text)
    return None if m is None else m[1]  # type: ignore[return-value]


def _target(text: str) -> Target:
    duration = find_duration(text)
    rest = _cut(text, duration)
    return Target(
        kind=_kind(text),
        name=_name(rest),
        seconds=duration.seconds if duration else None,
        every=bool(re.search(r"\b(?:all|every|both|everything)\b", text)),
    )


def _cut(text: str, span: Duration | ClockTime | None) -> str:
    """`text` without the time phrase and the preposition that introduced it."""
    if span is None:
        return text
    head, tail = text[: span.start], text[span.end :]
    for lead in _LEAD_IN:
        if head.endswith(lead):
            head = head[: -len(lead)]
            break
    return " ".join((head + " " + tail).split())


def _name(text: str) -> str | None:
    """The label a timer is called by ("pasta" in "the pasta timer", "timer for the eggs")."""
    for pattern in (_NAME_AFTER, _NAME_BEFORE):
        if (m := pattern.search(text)) is None:
            continue
        words = [w for w in m["name"].split() if w not in ("the", "my", "a", "an", "please")]
        if words and len(words) <= 4 and not set(words) & _NOT_NAMES:
            return " ".join(words)
    return None


def _when(text: str) -> tuple[Duration | None, ClockTime | None]:
    """A relative duration ("in 10 minutes") if one is said, else a time of day."""
    duration = find_duration(text)
    if duration is not None:
        return duration, None
    return None, find_clock(text)


def _reminder(text: str) -> Intent | None:
    duration, clock = _when(text)
    if duration is None and clock is None:
        # "remind me to call mom" needs a time; "remind me what you said" is not for us.
        asks = re.search(r"\breminds? me to\b|\breminder\b", text)
        return AskWhen(kind="reminder") if asks else None
    rest = _DAY_WORDS.sub("", _cut(text, duration or clock))
    task, conn = "", "to"
    if m := _TASK.search(rest):
        task = point_of_view(re.sub(r"\s*\bplease$", "", m["task"]))
        conn = {"of": "about", "for": "about"}.get(m["conn"] or "to", m["conn"] or "to")
    return SetTimer(
        kind="reminder",
        seconds=duration.seconds if duration else None,
        clock=clock,
        task=task,
        connector=conn,
    )


def _alarm(text: str) -> Intent | None:
    duration, clock = _when(text)
    if duration is None and clock is None:
        return AskWhen(kind="alarm") if _SET_VERB.match(text) else None
    return SetTimer(
        kind="alarm",
        seconds=duration.seconds if duration else None,
        clock=clock,
        prefer_morning=bool(re.search(r"\b(?:wake|get) me\b", text)),
    )


_CHANGE = re.compile(r"^(?:add|put|give)\b.*\b(?:to|on|onto) (?:the|my|that|this|it|your)\b")
"""More time for a running timer ("add 5 more minutes on the timer"), never a new one: the
intents (timer_intents.py) do that; words they did not recognise are not a set request."""


def _timer(text: str) -> Intent | None:
    if _CHANGE.match(text):
        return None
    duration = find_duration(text)
    said_as_command = bool(_SET_VERB.match(text) or _TIMER_FIRST.match(text)
                           or (duration is not None and _MISHEARD_SET.match(text)))
    if duration is not None and not said_as_command:
        # "10 minute timer", "a 15 minute timer please": the duration leads, "timer" follows.
        lead = text[: duration.start].strip()
        said_as_command = lead in ("", "a", "an", "another") and bool(
            _TIMER_AFTER.match(text[duration.end :])
        )
    if not said_as_command:
        return None
    if duration is None:
        return AskWhen(kind="timer") if _SET_VERB.match(text) else None
    return SetTimer(kind="timer", seconds=duration.seconds, name=_name(_cut(text, duration)))


def point_of_view(task: str) -> str:
    """The user's words as the assistant says them back: "call my mom" → "call your mom"."""
    return " ".join(_POV.get(word, word) for word in task.split())
