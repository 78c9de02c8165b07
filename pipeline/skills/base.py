"""What every skill shares: the reply it gives, the context it reads, the text it matches.

A skill answers a transcript deterministically (patterns over normalised text, no model)
or declines with None. Its reply is a template the TTS speaks as is. A reply may carry an
`action`: the side effect (start a timer, add to a list) applied only when the turn is
committed — a speculative reply for a transcript the user then continued must change
nothing — and at most once. It may also carry a `result` (`LastResult`): what the answer
was, which the conversation keeps once the turn is done so that a follow-up ("add five to
that", "and in feet?", "and tomorrow?") can work on it; a speculation never sets it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Literal, Protocol


@dataclass(frozen=True, kw_only=True)
class LastResult:
    """What the last finished turn answered, for a follow-up that refers to it.

    Set by the skill that answered (its reply's `result`), kept by the conversation once
    the turn is done; an LLM turn leaves a "topic" (its words reach the LLM through the
    history, not here). A follow-up reads only the kind it can work on, so "add five to
    that" after a date, or "and in feet?" after a sum, is not taken as one.
    """

    skill: str
    """Who answered: a skill's name, or "llm"."""
    kind: Literal["number", "quantity", "day", "refusal", "topic"]
    topic: str = ""
    """What was asked, as the answer echoed it ("12 times 7"; the transcript for "topic";
    the refusal said, for "refusal")."""
    value: float | None = None
    """The answer's number (84; 6.21 for 10 kilometers in miles), unrounded."""
    unit: str | None = None
    """The answer's unit: pint's name for a quantity, the currency of a sum in money."""
    asked: float | None = None
    """A conversion's amount as asked (10), in `asked_unit` (pint's "kilometer")."""
    asked_unit: str | None = None
    day: date | None = None
    """The day a date answer was about."""


@dataclass(frozen=True)
class SkillReply:
    """A skill's answer: `text` is spoken as it is; `action` runs once, at commit."""

    text: str
    skill: str
    """The skill's name ("timer", "list", "math", "convert", "clock", "spell", "facts",
    "offline")."""
    action: Callable[[], None] | None = field(default=None, compare=False)
    refusal: bool = False
    """An honest "I cannot do that" (offline-only requests). The exchange is left out of
    what the LLM reads next: a small model copies a refusal into ordinary answers."""
    result: LastResult | None = None
    """What this answer was, for a follow-up (None: nothing a follow-up can refer to)."""
    source: str | None = None
    """Where the answer's facts come from (a data package and its version), shown with
    the turn; None for what a skill computes or says itself."""
    found_nothing: bool = False
    """The request named a thing that is not there ("There's no might be the timer
    running") while others are: the words may be misheard, so the turn is worth hearing
    again (pipeline.answer.second_hearing)."""

    @property
    def asks(self) -> bool:
        """The reply asks the user something back ("For how long?", "When should I remind
        you? You can say …"): the request was not whole, so the user may still be going on."""
        return "?" in self.text

    @property
    def whole_request(self) -> bool:
        """The words were understood as a whole request, so the turn may end early: not
        when the reply asks back, nor for a refusal, which a topic word alone brings on
        ("What is the weather light? | in Paris today?", as Whisper heard "… like" at the
        pause; ending refusals early gave the blind exam a reply over a paused question:
        docs/quality.md). One cut at a pause anyway is finished by what the user says next
        (pipeline.skills.refusals)."""
        return not self.asks and not self.refusal


@dataclass(frozen=True)
class SkillContext:
    """What a skill may read besides the words: the local time, and whose data it is."""

    now: datetime
    """Timezone-aware local wall-clock time."""
    monotonic: float
    """`pipeline.timeline.now()` at the same instant: timers are due on this clock."""
    owner: str = "default"
    """Whose lists and notes (one per user/session owner)."""
    transcript: str = ""
    """The words as transcribed, before `normalise` (a list skill reads its commas)."""
    previous: str = ""
    """The assistant's last reply, as heard (small talk does not say the same thing twice;
    the clock still reads "Today is …" from it). A follow-up's referent is `last`."""
    last: LastResult | None = None
    """What the last finished turn answered (None: nothing yet, or nothing to refer to)."""
    earlier: tuple[str, ...] = ()
    """Everything the assistant said in this conversation, as heard, oldest first (a
    decline already given is said as still so)."""


class Skill(Protocol):
    name: str

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        """The reply to `text` (already normalised by `normalise`), or None: not mine."""
        ...


_PUNCT = re.compile(r"[^\w\s'%°.\-/:+*]")
_LIST_COMMA = re.compile(r"(?<=[a-z]),(?=\s)")
_NUMBER = r"(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|\w+ty(?:-\w+)?|\w+teen)"
_RESPELT: tuple[tuple[re.Pattern[str], str], ...] = (
    # "add one hour's four minutes to my timer": a possessive where a plural was said
    (re.compile(r"\b(hour|minute|second)'s\b"), r"\1s"),
    # "56 minutes in 40 seconds": tiny.en's "and" between the parts of one duration
    (re.compile(rf"\b({_NUMBER} (?:hours?|minutes?)) in ({_NUMBER} (?:minutes?|seconds?))\b"),
     r"\1 and \2"),
    # "one hours for minutes": "four" heard as "for" between the parts of a duration
    (re.compile(r"\b(hours?|minutes?) for (minutes?|seconds?)\b"), r"\1 four \2"),
    # "pause to hours timer", "a for minute timer": "two" heard as "to"/"too" and "four"
    # as "for" where only a number can stand, before a duration unit that names a timer
    # ("convert 90 seconds to minutes", "a timer for minutes" stay as said)
    (re.compile(rf"(?<![\w'])(?:to|too) (hours?|minutes?|seconds?)(?= timers?\b| and {_NUMBER}\b)"),
     r"two \1"),
    (re.compile(r"\b(a|the|my|your) for (hours?|minutes?|seconds?)(?= timers?\b)"),
     r"\1 four \2"),
    (re.compile(r"\bfor (?:to|too) (hours?|minutes?|seconds?)\b"), r"for two \1"),
    # "add the olive oil to the least": a list said at the end of an add
    (re.compile(r"^((?:add|put) .+ (?:to|on|onto) (?:the|my|our) (?:shopping )?)least$"), r"\1list"),
    # "state us on my timers": "status" heard as two words
    (re.compile(r"^state us (?=(?:of|on|for) (?:my|the|all|your)\b)"), "status "),
)
"""What Whisper writes for the words of a request in ways no phrasing means."""


def normalise(transcript: str, *, commas: bool = False) -> str:
    """Lower case, curly quotes straightened, punctuation but the meaningful (' % ° . - /
    : + *) dropped, spaces collapsed, a trailing full stop or question mark removed.
    `commas`: keep a comma that ends a word ("apples, pears and milk": three items)."""
    text = transcript.replace("\u2019", "'").replace("\u2018", "'").lower()
    if commas:
        text = _LIST_COMMA.sub(" qqcommaqq", text)
    text = _PUNCT.sub(" ", text)
    if commas:
        text = text.replace(" qqcommaqq", ",")
    text = " ".join(text.split()).rstrip(".?! ").strip()
    for pattern, said in _RESPELT:
        text = pattern.sub(said, text)
    return text
