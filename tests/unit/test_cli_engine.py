"""The engine flags: `--threads` (0 means every core for each model, the LLM included),
the ear's flags."""

from __future__ import annotations

import os

import pytest

from app.cli import _parser, settings_from
from app.cli.errors import UsageError


def _settings(*flags: str):  # type: ignore[no-untyped-def]
    return settings_from(_parser().parse_args(["talk", "q.wav", *flags]))


def test_threads_0_gives_the_llm_every_core() -> None:
    assert _settings().llm.threads == max(1, os.cpu_count() or 1)
    assert _settings("--threads", "0").models.threads == 0  # (the others: cpu_threads(0))


def test_a_thread_count_is_given_to_the_llm_as_is() -> None:
    assert _settings("--threads", "3").llm.threads == 3


def test_the_beam_width_reaches_the_asr_options() -> None:
    assert _settings().asr.beam_size == 3
    assert _settings("--asr-beam", "1").asr.beam_size == 1
    assert _settings("--asr-beam", "5").asr.beam_size == 5


def test_a_beam_width_out_of_range_is_a_usage_error_naming_the_flag() -> None:
    for bad in ("0", "11"):
        with pytest.raises(UsageError, match="--asr-beam"):
            _settings("--asr-beam", bad)
        with pytest.raises(UsageError, match="--noisy-asr-beam"):
            _settings("--noisy-asr-beam", bad)


def test_the_noisy_room_ears_beam_is_its_own() -> None:
    asr = _settings("--noisy-asr-beam", "4").asr
    assert (asr.beam_size, asr.noisy_beam_size) == (3, 4)
    assert _settings().asr.noisy_beam_size == 1


def test_the_barge_in_and_hold_flags_reach_the_conversation() -> None:
    conversation = _settings().conversation
    assert (conversation.barge_in_ms, conversation.hold_ms) == (200, 100)
    conversation = _settings("--barge-in-ms", "300", "--hold-ms", "off").conversation
    assert (conversation.barge_in_ms, conversation.hold_ms) == (300, None)
    assert _settings("--hold-ms", "120").conversation.hold_ms == 120
    assert _settings().conversation.held_barge_in_ms == 800
    assert _settings("--held-barge-in-ms", "500").conversation.held_barge_in_ms == 500
    assert _settings("--held-barge-in-ms", "off").conversation.held_barge_in_ms is None


@pytest.mark.parametrize("flags", [("--hold-ms", "200"), ("--hold-ms", "soon"),
                                   ("--barge-in-ms", "100"), ("--barge-in-ms", "-5"),
                                   ("--held-barge-in-ms", "150"), ("--held-barge-in-ms", "x")])
def test_a_hold_that_is_not_before_the_barge_in_is_a_usage_error(flags: tuple[str, str]) -> None:
    with pytest.raises(UsageError, match="--hold-ms"):
        _settings(*flags)
