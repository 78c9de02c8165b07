"""`--threads`: 0 means every core for each model, the LLM included."""

from __future__ import annotations

import os

from app.cli import _parser, settings_from


def _settings(*flags: str):  # type: ignore[no-untyped-def]
    return settings_from(_parser().parse_args(["talk", "q.wav", *flags]))


def test_threads_0_gives_the_llm_every_core() -> None:
    assert _settings().llm.threads == max(1, os.cpu_count() or 1)
    assert _settings("--threads", "0").models.threads == 0  # (the others: cpu_threads(0))


def test_a_thread_count_is_given_to_the_llm_as_is() -> None:
    assert _settings("--threads", "3").llm.threads == 3
