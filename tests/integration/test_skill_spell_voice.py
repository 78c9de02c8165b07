"""A spelled word through the real Piper voice: slow enough to write the letters down."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from models.piper import PiperSynthesizer
from pipeline.answer.clauses import ClauseSplitter
from pipeline.events import SAMPLE_RATE
from pipeline.skills.base import SkillContext, normalise
from pipeline.skills.spell import SpellSkill

pytestmark = pytest.mark.integration

MIN_SECONDS_PER_LETTER = 0.3


def _seconds(voice: PiperSynthesizer, text: str) -> float:
    return sum(len(chunk) for chunk in voice.synthesize(text)) / SAMPLE_RATE


def test_spelled_letters_take_at_least_a_third_of_a_second_each(voice: PiperSynthesizer) -> None:
    ctx = SkillContext(now=datetime(2026, 12, 1, tzinfo=UTC), monotonic=0.0)
    reply = SpellSkill().answer(normalise("how do you spell necessary"), ctx)
    assert reply is not None
    # Spoken as the pipeline speaks it: cut into clauses, each synthesized on its own.
    splitter = ClauseSplitter()
    clauses = [*splitter.feed(reply.text), *splitter.flush()]
    total = sum(_seconds(voice, clause.text) for clause in clauses)
    letters_time = total - _seconds(voice, "Necessary is spelled")
    assert letters_time / len("necessary") >= MIN_SECONDS_PER_LETTER
