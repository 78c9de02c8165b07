"""Spelling a word letter by letter: "how do you spell rhythm" → "Rhythm is spelled R, H, Y, T, H, M."

A small LLM misspells as readily as it miscounts; the letters of the word the user said are
the answer. Each letter is a capital followed by a comma: Piper then says the letter's name
("A" is "ay", not the article) and pauses after it, about half a second a letter with the
default voice — slow enough to write down (tests/integration/test_skill_spell_voice.py).
"""

from __future__ import annotations

import re

from pipeline.skills.base import SkillContext, SkillReply
from pipeline.skills.phrasing import core

MAX_LETTERS = 30
"""Longer "words" are not a spelling request anyone makes; spelling one would take 15 s."""

_WORD = r"'?[a-z][a-z'\-]*"
_ASKED = re.compile(
    r"(?:how (?:do|would|should|can|does) (?:you|i|we|one|someone) spell"
    r"|how to spell|what(?:'s| is) the spelling of|(?:the )?spelling of)"
    rf"(?: the word| the name)? (?P<words>{_WORD}(?: {_WORD})?)"
    rf"|how (?:is|are|do you spell|'s) (?P<spelled>{_WORD}(?: {_WORD})?) (?:spelled|spelt|spelled out)"
    rf"|(?:can you |could you |please )?spell(?: out)?(?: the word| the name| that word)?"
    rf" (?P<bare>{_WORD})"
)
_NOT_WORDS = frozenset(
    "it that this them those these me you us your my his her their our its something anything "
    "everything words check checker checking bound book books caster casting".split()
)
"""After "spell": a pronoun or possessive (the word is elsewhere: "spell it", "spell your
name") or the rest of another phrase ("spell check", "spell bound")."""
_SYMBOLS = {"'": "apostrophe", "-": "hyphen", " ": "space"}


class SpellSkill:
    """Spells the word asked about, one letter at a time."""

    name = "spell"

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        m = _ASKED.fullmatch(core(text))
        if m is None:
            return None
        word = (m["words"] or m["spelled"] or m["bare"]).strip("'")
        if not word or word in _NOT_WORDS or len(word) > MAX_LETTERS or \
                any(part in _NOT_WORDS for part in word.split()):
            return None
        return SkillReply(text=f"{word.capitalize()} is spelled {spell_out(word)}.", skill=self.name)


def spell_out(word: str) -> str:
    """"N, E, C, E, S, S, A, R, Y": capital letters, comma-separated; an apostrophe, a
    hyphen or a space said by name."""
    return ", ".join(_SYMBOLS.get(char, char.upper()) for char in word)
