"""The audio end-of-turn bench: how its clips are cut, which questions it speaks, and the
model's input as smart-turn's own feature code makes it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.bench import conversations
from app.bench.turn_audio import TAIL_S, complete_texts, cut_at_pause, cut_at_speech_end, paused_texts
from models.smart_turn import SAMPLE_RATE, WINDOW_S, log_mel


def _tone(seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    return (8000 * np.sin(2 * np.pi * 200 * t)).astype(np.int16)


def _quiet(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * SAMPLE_RATE), np.int16)


def test_a_clip_ends_where_its_speech_does_plus_the_tail() -> None:
    speech = np.concatenate([_quiet(0.3), _tone(0.5)])
    clip = cut_at_speech_end(np.concatenate([speech, _quiet(1.0)]))
    assert len(clip) == pytest.approx(len(speech) + TAIL_S * SAMPLE_RATE, abs=80)
    assert not clip[-int(TAIL_S * SAMPLE_RATE):].any()


def test_a_fragment_is_cut_at_the_pause_nearest_where_its_words_end_alone() -> None:
    first, second = np.concatenate([_tone(0.4), _quiet(0.1)]), np.concatenate([_tone(0.4), _quiet(0.2)])
    whole = np.concatenate([_quiet(0.3), first, second, _tone(0.5)])
    pause = int((0.3 + 0.5 + 0.4) * SAMPLE_RATE)  # where the second quiet stretch begins
    clip = cut_at_pause(whole, pause + 1000, tail_s=0.0)
    assert abs(len(clip) - pause) < 80  # not the earlier, shorter gap nor the end


def test_paused_questions_become_a_fragment_and_the_question_with_a_comma_at_the_pause() -> None:
    pairs = dict(paused_texts())
    assert pairs["Set a timer for"] == "Set a timer for, ten minutes."
    assert pairs["Remind me to buy"] == "Remind me to buy, milk when I get home."


def test_the_complete_set_never_reads_the_blind_split(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    gone = tmp_path / "missing.toml"
    splits = tuple((gone if split == "blind" else path, split)
                   for path, split in conversations.SPLITS)
    monkeypatch.setattr(conversations, "SPLITS", splits)
    texts = complete_texts()  # reading `gone` would raise FileNotFoundError
    held_out = conversations.parse_conversations(conversations.HELD_OUT.read_text(), "h")
    assert held_out[0].turns[0].say in texts and len(texts) == len(set(texts))


def test_the_model_hears_the_last_eight_seconds_zero_padded_at_the_front() -> None:
    rng = np.random.default_rng(1)
    short = (0.1 * rng.standard_normal(2 * SAMPLE_RATE)).astype(np.float32)
    padded = np.concatenate([np.zeros(6 * SAMPLE_RATE, np.float32), short])
    assert log_mel(short).shape == (80, 800)
    np.testing.assert_allclose(log_mel(short), log_mel(padded), atol=1e-6)
    long = (0.1 * rng.standard_normal(9 * SAMPLE_RATE)).astype(np.float32)
    np.testing.assert_allclose(log_mel(long), log_mel(long[-WINDOW_S * SAMPLE_RATE:]), atol=1e-6)
    assert not np.allclose(log_mel(long), log_mel(long[:WINDOW_S * SAMPLE_RATE]), atol=1e-3)
