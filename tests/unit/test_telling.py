"""Telling (pipeline.answer.telling): a reply's clauses counted against its budgets."""

from __future__ import annotations

import asyncio

from pipeline.answer.clauses import ClauseSplitter
from pipeline.answer.telling import Budget, Telling
from pipeline.events import Clause


def telling() -> tuple[Telling, list[Clause]]:
    seen: list[Clause] = []
    return Telling(ClauseSplitter(), asyncio.Queue(), seen.append), seen


def queued(told: Telling) -> list[str]:
    out = []
    while not told.clauses.empty():
        clause = told.clauses.get_nowait()
        out.append("<end>" if clause is None else clause.text)
    return out


def test_the_reply_stops_at_its_sentence_budget_and_every_clause_is_told_first() -> None:
    told, seen = telling()
    assert told.say("Paris is the capital. It is in France. ", Budget(1, 45)) is True
    told.finish(Budget(1, 45))
    assert queued(told) == ["Paris is the capital.", "<end>"]
    assert [c.text for c in seen] == ["Paris is the capital."]
    assert told.spent


def test_the_word_budget_ends_the_reply_at_a_sentence_end_not_mid_sentence() -> None:
    told, _ = telling()
    budget = Budget(4, 5)
    assert told.say("Honey bees make honey from nectar. ", budget) is True
    assert told.told == ["Honey bees make honey from nectar."]


def test_an_offer_after_the_answer_is_not_said_by_an_llm_reply_but_is_by_a_skill() -> None:
    text = "It is noon. What else can I do for you? "
    llm, _ = telling()
    assert llm.say(text, Budget(4, 45, drops_offers=True)) is True
    assert llm.told == ["It is noon."]
    skill, _ = telling()
    skill.say(text, Budget(4, 45))
    skill.finish(Budget(4, 45))
    assert skill.told == ["It is noon.", "What else can I do for you?"]


def test_an_unfinished_tail_after_a_whole_sentence_is_not_said_but_a_lone_one_is() -> None:
    """A reply cut by the token cap ("However, you") keeps its whole sentences; a reply
    that is only a fragment is all there is, so it is said."""
    told, _ = telling()
    told.say("It is noon. However, you", Budget(4, 45))
    told.finish(Budget(4, 45))
    assert queued(told) == ["It is noon.", "<end>"]
    lone, _ = telling()
    lone.say("About twelve", Budget(4, 45))
    lone.finish(Budget(4, 45))
    assert queued(lone) == ["About twelve", "<end>"]
