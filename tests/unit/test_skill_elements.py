"""ElementsSkill: symbols, atomic numbers and masses from the packaged periodic table; a
request naming no element is left to the LLM."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from models.element_data import elements_phrasings, elements_skill, load_elements
from pipeline.skills.base import SkillContext, normalise
from pipeline.skills.elements import Element, ElementsSkill, spelled


def ask(question: str, previous: str = "") -> str | None:
    ctx = SkillContext(now=datetime(2026, 12, 5, tzinfo=UTC), monotonic=0.0,
                       previous=previous, transcript=question)
    reply = elements_skill().answer(normalise(question), ctx)
    if reply is not None:
        assert reply.skill == "elements" and reply.source is not None
        assert "periodictable" in reply.source
    return None if reply is None else reply.text


@pytest.mark.parametrize(("question", "reply"), [
    ("What is the chemical symbol for gold?", "The chemical symbol for gold is A, U."),
    ("What's the symbol for iron?", "The chemical symbol for iron is F, E."),
    ("Can you tell me the chemical symbol of carbon?", "The chemical symbol for carbon is C."),
    ("What's sodium's symbol?", "The chemical symbol for sodium is N, A."),
    ("What is the atomic number of carbon?", "The atomic number of carbon is 6."),
    ("How many protons does oxygen have?", "The atomic number of oxygen is 8."),
    ("What is the atomic mass of iron?", "The atomic mass of iron is about 55.845."),
    ("Which element has the symbol Fe?", "Iron is element number 26, symbol F, E."),
    ("What element is Au on the periodic table?", "Gold is element number 79, symbol A, U."),
    ("Which element has the symbol F E?", "Iron is element number 26, symbol F, E."),
    ("What element is number six?", "Carbon is element number 6, symbol C."),
    ("Which element has atomic number 79?", "Gold is element number 79, symbol A, U."),
])
def test_the_periodic_table_answers(question: str, reply: str) -> None:
    assert ask(question) == reply


@pytest.mark.parametrize("question", [
    "What is the symbol for love?", "Which element has the symbol XY?",
    "What element is number 500?", "What is the atomic number?", "What is gold?",
    "What is the capital of France?", "And for silver?",  # nothing before it to follow
])
def test_no_element_is_not_matched(question: str) -> None:
    assert ask(question) is None


def test_a_follow_up_asks_the_same_of_another_element() -> None:
    said = ask("What is the chemical symbol for gold?")
    assert ask("And for silver?", previous=str(said)) == "The chemical symbol for silver is A, G."
    said = ask("What is the atomic number of carbon?")
    assert ask("What about nitrogen?", previous=str(said)) == \
        "The atomic number of nitrogen is 7."


def test_the_table_is_whole() -> None:
    table = load_elements()
    assert [e.number for e in table] == list(range(1, 119))
    assert {e.symbol for e in table} >= {"H", "He", "Au", "Og"}


def test_the_skill_reads_the_table_it_is_given() -> None:
    skill = ElementsSkill([Element(number=1, symbol="Xq", name="fakium", mass=None)],
                          phrasings=elements_phrasings(), source="test")
    ctx = SkillContext(now=datetime(2026, 12, 5, tzinfo=UTC), monotonic=0.0)
    reply = skill.answer("what is the symbol for fakium", ctx)
    assert reply is not None and reply.text == "The chemical symbol for fakium is X, Q."
    assert skill.answer("what is the atomic mass of fakium", ctx) is None  # none known


def test_symbols_are_spelled_letter_by_letter() -> None:
    assert spelled("Au") == "A, U" and spelled("C") == "C"
