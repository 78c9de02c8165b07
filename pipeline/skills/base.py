"""What every skill shares: the reply it gives, the context it reads, the text it matches.

A skill answers a transcript deterministically (patterns over normalised text, no model)
or declines with None. Its reply is a template the TTS speaks as is. A reply may carry an
`action`: the side effect (start a timer, add to a list) applied only when the turn is
committed — a speculative reply for a transcript the user then continued must change
nothing — and at most once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol


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
    source: str | None = None
    """Where the answer's facts come from (a data package and its version), shown with
    the turn; None for what a skill computes or says itself."""


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
    """The assistant's last reply: "and what is that divided by four?" reads its number."""


class Skill(Protocol):
    name: str

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        """The reply to `text` (already normalised by `normalise`), or None: not mine."""
        ...


_PUNCT = re.compile(r"[^\w\s'%°.\-/:+*]")
_LIST_COMMA = re.compile(r"(?<=[a-z]),(?=\s)")


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
    text = " ".join(text.split())
    return text.rstrip(".?! ").strip()
