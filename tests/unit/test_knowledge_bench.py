"""The knowledge bench's question set and scoring (app/bench/knowledge.py)."""

from __future__ import annotations

import re

import pytest

from app.bench.knowledge import QUESTIONS, right, table


def test_there_are_sixty_distinct_questions_each_with_a_pattern_that_compiles() -> None:
    assert len(QUESTIONS) == 60
    assert len({q for q, _ in QUESTIONS}) == 60
    for _, pattern in QUESTIONS:
        re.compile(pattern)


@pytest.mark.parametrize(("said", "pattern"), [
    ("The largest ocean is the Pacific Ocean.", r"pacific"),
    ("Plants take in carbon dioxide.", r"carbon dioxide|co2|co₂"),
    ("Bats are the only mammals that fly.", r"bats?\b"),
    ("Water freezes at 0°C.", r"(zero|0)(?![\d.,])"),
    ("The chemical symbol for gold is \\u0027Au\\u0027.", r"au\b"),
    ("A butterfly!", r"butterfl|moth"),
])
def test_a_reply_naming_the_answer_anywhere_is_right(said: str, pattern: str) -> None:
    assert right(said, pattern)


@pytest.mark.parametrize(("said", "pattern"), [
    ("The tallest animal is a lion.", r"giraffe"),
    ("A hexagon has 16 sides.", r"(six|6)(?!\d)"),
    ("Water freezes at 10 degrees.", r"(zero|0)(?![\d.,])"),
    ("They fought in combat.", r"bats?\b"),
    ("It is in Australia.", r"au\b"),
])
def test_a_reply_without_the_answer_as_a_word_is_wrong(said: str, pattern: str) -> None:
    assert not right(said, pattern)


def test_the_table_gives_each_model_its_ratios_to_the_baseline() -> None:
    speeds = {"base": {"decode_ms_per_token": 40.0, "prompt_ms": 200.0, "user_tokens": 30.0},
              "other": {"decode_ms_per_token": 44.0, "prompt_ms": 100.0, "user_tokens": 31.0}}
    lines = table({"base": 30, "other": 45}, speeds, "base").splitlines()
    assert lines[2] == "| base | 30 | 40.0 | 1.00x | 200 (30) | 1.00x |"
    assert lines[3] == "| other | 45 | 44.0 | 1.10x | 100 (31) | 0.50x |"
