"""The end-of-turn model (the embedded SmolLM2) tells finished turns from fragments."""

from __future__ import annotations

import pytest

from models.load import open_turn_detector
from models.locate import locate
from models.turn_detector import PLAIN, PLAIN_THRESHOLDS, LlamaTurnDetector
from pipeline.listen.endpointing import EndpointOptions

pytestmark = pytest.mark.integration

FINISHED = ["What is the capital of France?", "How many days are there in a week?",
            "What is the capital of Spain?", "Set a timer for ten minutes.",
            "Turn off the lights in the kitchen.", "Play some music by the Beatles."]
FRAGMENTS = ["What is the capital?", "Set a timer for.", "Tell me a fun fact about",
             "Turn off the lights in.", "Play some music by", "How far is the men?",
             "Can you remind me to call?"]  # as Whisper wrote them after a pause


@pytest.fixture(scope="module")
def detector() -> LlamaTurnDetector:
    found = open_turn_detector(locate("turn").path, threads=2)
    yield found
    found.close()


def test_finished_turns_score_above_the_done_threshold(detector: LlamaTurnDetector) -> None:
    scores = {text: detector.done_logprob(text) for text in FINISHED}
    assert all(s >= EndpointOptions().done_logprob for s in scores.values()), scores


def test_fragments_score_below_the_unfinished_threshold(detector: LlamaTurnDetector) -> None:
    scores = {text: detector.done_logprob(text) for text in FRAGMENTS}
    assert all(s <= EndpointOptions().unfinished_logprob for s in scores.values()), scores


SHORT_WHOLE = ["What is gravity?", "Who wrote Romeo and Juliet?"]
"""Whole questions the plain formulation was unsure of (-12.6: the 1 s statement wait)."""


def test_short_whole_questions_end_fast_where_the_plain_score_was_unsure(
        detector: LlamaTurnDetector) -> None:
    scores = {text: detector.done_logprob(text) for text in SHORT_WHOLE}
    assert all(s >= EndpointOptions().done_logprob for s in scores.values()), scores
    plain = open_turn_detector(locate("turn").path, threads=2, prompt=PLAIN)
    try:
        before = {text: plain.done_logprob(text) for text in SHORT_WHOLE}
    finally:
        plain.close()
    assert all(PLAIN_THRESHOLDS[1] < s < PLAIN_THRESHOLDS[0] for s in before.values()), before


def test_a_verdict_does_not_depend_on_the_checks_before_it(detector: LlamaTurnDetector) -> None:
    """Each check rewinds to the cached system prompt: no earlier words leak into it."""
    first = detector.done_logprob("What is the capital?")
    detector.done_logprob("Tell me a very long story about dragons and knights and castles")
    assert detector.done_logprob("What is the capital?") == pytest.approx(first, abs=0.05)


def test_words_read_ahead_give_the_same_verdict_and_are_not_read_again(
        detector: LlamaTurnDetector) -> None:
    plain = detector.done_logprob("Who wrote Romeo and Juliet?")
    detector.done_logprob("Tell me a story")
    detector.prefill("Who wrote Romeo")
    evaluated: list[int] = []
    eval_ = detector.llama.eval
    detector.llama.eval = lambda tokens: (evaluated.append(len(tokens)), eval_(tokens))[1]  # type: ignore[method-assign]
    try:
        verdict = detector.done_logprob("Who wrote Romeo and Juliet?")
    finally:
        del detector.llama.eval
    assert verdict == pytest.approx(plain, abs=0.05)
    rest = detector.llama.tokenize(b" and juliet", add_bos=False)
    assert evaluated == [len(rest)]
