"""Words the recognizer writes for the ones it heard badly, matched by how they sound.

In a noisy room Whisper keeps a sentence's shape but swaps a word for one that sounds
like it: "convert 100 degrees Fahrenheit to solstice", "when is thanks eating this year",
"wait me up at a quarter past six". A skill that knows which word belongs in a slot (a
unit, a holiday, the verb of an alarm) may take a word that sounds like it *there* and
nowhere else: the sentence's structure is the evidence, the sound only decides which of
the slot's few words was said. Everything else still goes to the LLM.

`sound_key` is a crude English consonant skeleton (in the spirit of Metaphone, without
its tables): spellings of one sound are merged ("c" before e/i/y is "s", "ph" is "f"),
a silent "h" dropped, each run of vowels one "a", doubled letters collapsed —
"solstice" and "celsius" are "salstasa" and "salsas".
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable

_SPELLINGS = (
    ("tch", "ch"), ("ph", "f"), ("ck", "k"), ("qu", "kw"), ("x", "ks"), ("wh", "w"),
    ("dg", "j"), ("sch", "sk"), ("gh", "g"),
)
_SOFT_C = re.compile(r"c(?=[eiy])")
_SILENT_H = re.compile(r"(?<=[^cstw])h")
_VOWELS = re.compile(r"[aeiouy]+")
_DOUBLE = re.compile(r"(.)\1+")

CUTOFF = 0.8
"""How close two keys must be (difflib's ratio): "thanks eating" is 0.82 of
"thanksgiving", "drums" 0.75 of "grams"."""
_SHORTEST = 3
"""Keys shorter than this ("to", "a") carry too little sound to match anything."""


@functools.lru_cache(maxsize=4096)
def sound_key(text: str) -> str:
    """The sound skeleton of `text` (letters only; spaces ignored): "thanks eating"
    → "thanksatang", "thanksgiving" → "thanksgavang"."""
    word = re.sub(r"[^a-z]", "", text.lower())
    if not word:
        return ""
    for spelled, sound in _SPELLINGS:
        word = word.replace(spelled, sound)
    word = _SOFT_C.sub("s", word).replace("c", "k").replace("z", "s")
    word = _SILENT_H.sub("", word)
    return _DOUBLE.sub(r"\1", _VOWELS.sub("a", word))


def sounds_like(said: str, vocabulary: Iterable[str], *, cutoff: float = CUTOFF) -> str | None:
    """The entry of `vocabulary` that `said` sounds most like, if it is close enough and
    no other entry is as close; None otherwise. An exact spelling always wins. (Keys are
    cached, and difflib's cheap upper bounds skip most entries: ~0.1 ms for 50 words.)"""
    words = list(vocabulary)
    if said in words:
        return said
    key = sound_key(said)
    if len(key) < _SHORTEST:
        return None
    matcher = difflib.SequenceMatcher(None, b=key)
    scored = []
    for word in words:
        matcher.set_seq1(sound_key(word))
        if matcher.real_quick_ratio() >= cutoff and matcher.quick_ratio() >= cutoff:
            scored.append((matcher.ratio(), word))
    scored.sort(reverse=True)
    if not scored or scored[0][0] < cutoff:
        return None
    if len(scored) > 1 and scored[1][0] == scored[0][0] and \
            sound_key(scored[1][1]) != sound_key(scored[0][1]):
        return None
    return scored[0][1]


_LONG_A = re.compile(r"^[a-z]*(?:a[bdgkpt]e|ai[bdgkpt]e?|eigh[t]?|ay)$")


def rhymes_with_wake(word: str) -> bool:
    """A one-syllable word on the vowel of "wake" ending in a stop, or open: what Whisper
    writes for a "wake" it half heard ("wait", "plate", "make", "weight")."""
    return bool(_LONG_A.match(word))
