"""What the user heard of a reply: the clauses as they were made and played, and the
words that had reached them when the reply stopped (an interrupted reply keeps only those
in the history)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.answer.llm import Message
from pipeline.conversation_events import Turn
from pipeline.events import SAMPLE_RATE, Clause
from pipeline.timeline import TTFA_BROWSER, TTFA_SERVER, Timeline


@dataclass
class Spoken:
    clause: Clause
    samples: int = 0
    played: int = 0
    done: bool = False


WORD_S = 0.35
"""Seconds a spoken word takes when no clause of this reply has been made whole yet
(Piper's voices at their normal pace: ~170 words a minute)."""


def heard_words(spoken: Sequence[Spoken]) -> list[str]:
    """The words played so far: whole clauses, then the played share of the next.

    A clause still being made is a prefix of its words: its played share is estimated
    at the pace of this reply's finished clauses, never more than all the audio made.
    """
    words: list[str] = []
    finished = [s for s in spoken if s.done and s.samples]
    word_samples = (sum(s.samples for s in finished) / sum(len(s.clause.text.split()) or 1
                                                           for s in finished)
                    if finished else WORD_S * SAMPLE_RATE)
    for s in spoken:
        clause_words = s.clause.text.split()
        if s.done and s.played >= s.samples:
            words += clause_words
            continue
        if s.samples:
            share = len(clause_words) * s.played / s.samples  # as if the whole clause
            if not s.done:
                share = min(share, s.played / word_samples)
            words += clause_words[: int(share)]
        break
    return words


def stamp_heard(current: Timeline | None, turns: list[Turn], t: float) -> Turn | None:
    """The page heard reply audio start at `t` (server clock): TTFA (browser).

    It belongs to the latest reply that started sending before `t`, within 2 s. A reply
    still being made (`current`) takes the stamp; a turn already recorded is replaced in
    `turns` by a copy with it, which is returned (its records must learn of it); else None.
    """
    def heard(timeline: Timeline) -> bool:
        sent = timeline.stamps.get(TTFA_SERVER)
        return sent is not None and sent <= t < sent + 2.0 and not timeline.has(TTFA_BROWSER)

    if current is not None and heard(current):
        current.stamp(TTFA_BROWSER, t)
        return None
    for i in range(len(turns) - 1, max(-1, len(turns) - 3), -1):
        turn = turns[i]
        if heard(turn.timeline):
            turns[i] = dataclasses.replace(turn, timeline=turn.timeline.with_stamp(TTFA_BROWSER, t))
            return turns[i]
    return None


def cut_last_reply(history: list[Message], text: str, share: float) -> list[Message]:
    """`history` with its last assistant message cut to the heard `share` of `text`
    (marked interrupted); unchanged when all of it was heard (`share` >= 1)."""
    for index in range(len(history) - 1, -1, -1):
        if history[index].role == "assistant":
            if share >= 1.0:
                break
            words = text.split()
            heard = " ".join(words[: int(len(words) * max(0.0, share))])
            return [*history[:index], Message("assistant", heard, interrupted=True),
                    *history[index + 1:]]
    return list(history)
