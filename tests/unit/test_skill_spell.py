"""SpellSkill: the letters of the word asked about, one by one, in a form Piper says slowly."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from pipeline.skills.base import SkillContext, normalise
from pipeline.skills.spell import MAX_LETTERS, SpellSkill, spell_out

CTX = SkillContext(now=datetime(2026, 12, 1, 15, 45, tzinfo=UTC), monotonic=0.0)
SKILL = SpellSkill()


def ask(transcript: str) -> str | None:
    reply = SKILL.answer(normalise(transcript), CTX)
    if reply is not None:
        assert reply.skill == "spell" and not reply.refusal and reply.action is None
    return None if reply is None else reply.text


@pytest.mark.parametrize(("transcript", "spoken"), [
    ("How do you spell necessary?", "Necessary is spelled N, E, C, E, S, S, A, R, Y."),
    ("Spell rhythm.", "Rhythm is spelled R, H, Y, T, H, M."),
    ("How is Wednesday spelled?", "Wednesday is spelled W, E, D, N, E, S, D, A, Y."),
    ("how do I spell restaurant", "Restaurant is spelled R, E, S, T, A, U, R, A, N, T."),
    ("what's the spelling of cat", "Cat is spelled C, A, T."),
    ("can you spell the word dog please", "Dog is spelled D, O, G."),
    ("How do you spell 'necessary'?", "Necessary is spelled N, E, C, E, S, S, A, R, Y."),
    ("how is colour spelt", "Colour is spelled C, O, L, O, U, R."),
])
def test_spelling_requests_get_the_letters(transcript: str, spoken: str) -> None:
    assert ask(transcript) == spoken


def test_apostrophes_hyphens_and_spaces_are_said_by_name() -> None:
    assert ask("can you spell don't") == "Don't is spelled D, O, N, apostrophe, T."
    assert ask("how do you spell ice cream") == (
        "Ice cream is spelled I, C, E, space, C, R, E, A, M.")
    assert spell_out("x-ray") == "X, hyphen, R, A, Y"


def test_letters_are_capitals_separated_by_commas() -> None:
    """A lone capital is read as the letter's name ("A" is "ay", not "uh"); the comma
    makes Piper pause between letters."""
    assert spell_out("banana") == "B, A, N, A, N, A"


@pytest.mark.parametrize("transcript", [
    "cast a spell", "what's a spell", "spell check", "spell check this document",
    "how do you spell it", "spell it out", "how do you spell your name", "spelling bee",
    "how many words can you spell", "a spell of bad weather", "spellbound",
    "spell " + "a" * (MAX_LETTERS + 1),
])
def test_near_misses_are_declined(transcript: str) -> None:
    assert ask(transcript) is None


def test_two_hundred_answers_take_under_a_second_after_the_first() -> None:
    phrasings = ["how do you spell necessary", "spell rhythm", "cast a spell",
                 "how is wednesday spelled", "what's a spell"]
    ask(phrasings[0])
    started = time.perf_counter()
    for i in range(200):
        ask(phrasings[i % len(phrasings)])
    assert time.perf_counter() - started < 1.0
