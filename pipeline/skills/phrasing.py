"""The wrapping around a request, removed before a skill matches its core.

"Hey, can you please tell me what's 12 times 7?" and "12 times 7" are the same request.
The stateless skills (math, convert, clock, spell) strip the polite lead-ins and tails
here, then match the core with a full-match pattern: anything left over that the pattern
does not know makes the skill decline, which is what keeps near-misses ("times square")
for the LLM.
"""

from __future__ import annotations

import re

from pipeline.skills.words import to_digits

_LEAD_IN = re.compile(
    r"^(?:(?:hey|hi|ok|okay|so|and|um|uh|well|please|quick question)\s+)*"
    r"(?:(?:can|could|would|will) you\s+(?:please\s+)?(?:tell me\s+|say\s+)?"
    r"|(?:do you know|i want to know|i'd like to know|i wonder|tell me)\s+)?"
    r"(?:please\s+)?"
)
_TAIL = re.compile(r"(?:\s+(?:please|for me|thanks|thank you|then|now|again))+$")
_CONTRACTIONS = ((re.compile(r"\bwhats\b"), "what's"), (re.compile(r"\bhows\b"), "how's"))
"""Whisper sometimes drops the apostrophe; the patterns are written with it."""
_THOUSANDS = re.compile(r"(?<![\d.])(\d{1,3})((?: \d{3})+)(?![\d.])")
"""`normalise` turns Whisper's "1,000" into "1 000"; the groups are one number."""


def core(text: str) -> str:
    """`text` (normalised) without polite lead-ins ("hey", "can you tell me", "please")
    and tails ("please", "for me", "thanks")."""
    for pattern, spelled in _CONTRACTIONS:
        text = pattern.sub(spelled, text)
    text = _LEAD_IN.sub("", text, count=1)
    return _TAIL.sub("", text).strip()


def digits(text: str) -> str:
    """`text` with number words as digits (words.to_digits) and "1 000" as "1000"."""
    return _THOUSANDS.sub(lambda m: m[1] + m[2].replace(" ", ""), to_digits(text))
