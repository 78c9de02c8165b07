"""A reply's words on their way to its voice: cut into clauses as they are written,
counted against the reply's length budgets, and queued for the speaker side
(pipeline.answer.voicing). Pure: no model, no clock.

An LLM reply is held to its word budget and says no offer of more help after its answer
("What can I do for you?"); a skill's reply is said whole (pipeline.answer.integrity).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from pipeline.answer.clauses import ClauseSplitter
from pipeline.answer.integrity import is_offer
from pipeline.events import Clause


@dataclass(frozen=True)
class Budget:
    """How long the reply may be: whole sentences, and words at a sentence end."""

    sentences: int
    words: int
    drops_offers: bool = False
    """An offer of more help after the answer is not said (an LLM reply's)."""


@dataclass
class Telling:
    splitter: ClauseSplitter
    clauses: asyncio.Queue[Clause | None]
    on_clause: Callable[[Clause], None]
    """Told of each clause as it is queued (the first one's audio goes first)."""
    told: list[str] = field(default_factory=list)
    """The clauses queued so far: what the reply says."""
    sentences: int = 0
    spent: bool = False
    """The budget is spent: nothing more is said."""

    def say(self, text: str, budget: Budget) -> bool:
        """Streamed text; True once the budget is spent."""
        return self.queue(self.splitter.feed(text), budget)

    def queue(self, made: list[Clause], budget: Budget) -> bool:
        """Hand clauses to the speaker side; True once the reply's sentence budget (or its
        word budget, at a sentence end) is spent."""
        for clause in made:
            if budget.drops_offers and self.sentences and self._at_sentence_start() \
                    and is_offer(clause.text):
                self.spent = True  # "What can I do for you?" after the answer: not said
                return True
            self.on_clause(clause)
            self.clauses.put_nowait(clause)
            self.told.append(clause.text)
            if clause.ends_sentence:
                self.sentences += 1
                words = sum(len(c.split()) for c in self.told)
                if self.sentences >= budget.sentences or words >= budget.words:
                    self.spent = True
                    return True
        return False

    def finish(self, budget: Budget) -> None:
        """The text is all written: the rest is said, and the clauses end. A reply cut by
        the token cap mid-sentence ("However, you"): after a whole sentence, its
        unfinished tail is not spoken."""
        if not self.spent:
            rest = self.splitter.flush()
            if not (self.told and rest and not ends_sentence(rest[-1].text)):
                self.queue(rest, budget)
        self.end()

    def end(self) -> None:
        self.clauses.put_nowait(None)

    def drop(self) -> None:
        """Text fed but not yet a clause is never said."""
        self.splitter.drop()

    def _at_sentence_start(self) -> bool:
        return not self.told or ends_sentence(self.told[-1])


def ends_sentence(text: str) -> bool:
    return text.rstrip().rstrip("\"')]").endswith((".", "!", "?", "…"))
