"""The LLM may not claim an action no skill performed, nor say the date or the time.

Asked "pause the pizza timer" in words no skill matched, a small LLM answers "Pizza timer
paused." while nothing changed; asked to add to a list, "I've added milk to your list."
Only skills change timers and lists, and when one acts the LLM is not asked. So an LLM
reply that claims a timer, alarm, reminder or list action is untrue by construction: it is
replaced by one honest sentence. Nor has the LLM a clock: a reply that says today's date
or the time is replaced by the clock skill's answer. Pure: patterns over text, no model.
"""

from __future__ import annotations

import re

NOT_DONE = "I haven't changed any timer or list. Please say that again, for example: pause the timer."
"""Said instead of an LLM reply that claims a timer or list action (nothing was done)."""

_ABOUT = re.compile(r"\b(?:timers?|alarms?|reminders?|remind|lists?|countdown)\b")
"""The user asked about one of these: only then is a claim looked for (chat is left alone)."""

_DONE = (r"(?:set|started|paused|resumed|restarted|unpaused|cancell?ed|stopped|added|extended|"
         r"reduced|shortened|removed|deleted|scheduled|created|put|taken|took|checked off|"
         r"crossed off|increased|decreased)")
_DO = (r"(?:set|start|pause|resume|restart|unpause|cancel|stop|add|extend|reduce|shorten|"
       r"remove|delete|schedule|create|put|take|check off|cross off|increase|decrease|remind)")
_CLAIMS = re.compile(
    # "I've paused the pizza timer", "I have added milk", "I'll remind you", "Done, I set…"
    rf"\b(?:i've|i have|i've just|i just|i'll|i will|i'm going to|i am going to|let me|"
    rf"i)\s+(?:now\s+|also\s+|gone ahead and\s+)?(?:{_DONE}|{_DO})\b"
    # "Pizza timer paused.", "Your timer is set for…", "Timer has been cancelled"
    rf"|\b(?:timers?|alarms?|reminders?|countdown)\s+(?:(?:is|are|has been|have been|was|now)\s+){{0,2}}"
    rf"{_DONE}\b"
    # "Added milk to your list", "Milk has been added to your shopping list"
    rf"|\b{_DONE}\b[^.!?]{{0,40}}\b(?:to|on|from|off)\s+(?:your|the|my)\s+(?:[a-z]+\s+)?list\b"
    # "56 minute timer, starting now." (a skill's own confirmation, copied from the history)
    r"|\b(?:timers?|alarms?|countdown)\b[^.!?]{0,20}\b(?:starting|started|running|going) now\b"
)


def claims_action(reply: str, transcript: str) -> bool:
    """`reply` (the LLM's words so far) claims a timer/alarm/reminder/list action for a
    `transcript` that asked about one."""
    if not _ABOUT.search(transcript.lower()):
        return False
    return bool(_CLAIMS.search(reply.lower().replace("\u2019", "'")))


_DAY_OR_MONTH = (r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february"
                 r"|march|april|may|june|july|august|september|october|november|december|\d)")
_CLOCK_CLAIMS = (
    # "The current date is 8/1/2023.": said as soon as its lead is, before the date is
    # spoken (the first clause is cut before "is", a linking word).
    (re.compile(r"\b(?:date(?: today| for today)? is|today's date is"
                rf"|today is {_DAY_OR_MONTH}|it(?: is|'s) (?:now )?{_DAY_OR_MONTH}\w* \d)"),
     "what's the date today"),
    (re.compile(r"\b(?:the (?:current |present )?time(?: now| right now)? is|it(?: is|'s) (?:now |"
                r"currently )?\d{1,2}(?::\d\d)? ?(?:am|pm|a\.m|p\.m|o'clock)\b"
                r"|is (?:now )?\d{1,2}:\d\d ?(?:am|pm|a\.m|p\.m)\b)"),
     "what time is it"),
)


def clock_claim(reply: str) -> str | None:
    """The request the clock answers ("what's the date today", "what time is it") when
    `reply` (the LLM's words so far) states today's date or the time, which the LLM cannot
    know (asked "What's the case date?", the 0.5B said "The current date is 8/1/2023.");
    None otherwise."""
    said = reply.lower().replace("\u2019", "'")
    for pattern, asked in _CLOCK_CLAIMS:
        if pattern.search(said):
            return asked
    return None
