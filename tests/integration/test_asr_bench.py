"""Vocabulary bias with the real Whisper tiny.en, and `apace bench --asr` on a tiny set."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.bench.asr import Line, asr_set, bench_asr
from app.bench.utterances import speak
from models.load import cpu_threads, load_transcriber
from models.locate import locate
from models.piper import PiperSynthesizer
from models.whisper import WhisperTranscriber
from pipeline.events import SAMPLE_RATE
from pipeline.listen.asr import AsrOptions
from tests.wer import wer

pytestmark = pytest.mark.integration

LAST_EXCHANGE = "How many ounces are in a pound? There are sixteen ounces in a pound."


@pytest.fixture(scope="module")
def biased() -> WhisperTranscriber:
    options = AsrOptions(bias=True, use_context=True)
    return load_transcriber(locate("asr").path, "cpu", "int8", cpu_threads(0), options)


def test_bias_keeps_a_clean_question_right(biased: WhisperTranscriber,
                                          voice: PiperSynthesizer) -> None:
    question = "How many tablespoons are in a cup?"
    pcm = speak(voice, question, lead_s=0.3, trail_s=0.3)
    assert wer(question, biased.transcribe(pcm)) == 0
    assert wer(question, biased.transcribe(pcm, context=LAST_EXCHANGE)) == 0
    timing = biased.last_timing
    assert timing is not None and timing.window_s == 10
    assert timing.prompt_tokens > len(biased.prompt("")) > 2  # the context was read
    by_default = WhisperTranscriber(biased.model, AsrOptions())
    assert by_default.prompt(LAST_EXCHANGE) == by_default.prompt("") == biased.prompt("")


def test_a_second_of_low_noise_is_still_heard_as_nothing(biased: WhisperTranscriber) -> None:
    """Prompted, Whisper says "Okay." to noise with confidence; the bias's own no-speech
    rule must still give ""."""
    noise = np.random.default_rng(7).normal(0, 100, SAMPLE_RATE).astype(np.int16)
    assert biased.transcribe(noise) == ""
    assert biased.transcribe(noise, context=LAST_EXCHANGE) == ""
    plain = WhisperTranscriber(biased.model, AsrOptions(bias=False))
    assert plain.transcribe(noise) == ""


def test_a_batch_hears_each_utterance_as_it_would_be_heard_alone(
        voice: PiperSynthesizer) -> None:
    """Jobs of several conversations due together (pipeline/listen/ear.py): one batch per encoder
    window, each transcript the one `transcribe` gives; noise stays nothing in a batch."""
    whisper = load_transcriber(locate("asr").path, "cpu", "int8", cpu_threads(0), AsrOptions())
    noise = np.random.default_rng(7).normal(0, 100, SAMPLE_RATE).astype(np.int16)
    clips = [speak(voice, "What is the capital of Spain?", lead_s=0.3, trail_s=0.3),
             noise,
             speak(voice, "Set a timer for ten minutes.", lead_s=0.3, trail_s=0.3),
             speak(voice, "How many legs does a spider have?", lead_s=0.3, trail_s=11)]
    alone = [whisper.transcribe(pcm) for pcm in clips]
    assert alone[1] == "" and all(alone[i] for i in (0, 2, 3))
    assert whisper.transcribe_many(clips) == alone
    assert whisper.last_timing is not None and whisper.last_timing.window_s == 20  # its own


def test_asr_bench_reports_a_table_from_three_utterances(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [*asr_set()[:2], Line("Is this year a leap year?", held_out=True)]
    runs = bench_asr(tmp_path, tiers={"tiny.en": locate("asr").path}, lines=lines, espeak=False)
    table = capsys.readouterr().out
    assert all(f"tiny.en bias {mode} " in table for mode in ("off", "on", "on+context"))
    assert "piper x0.85" in table and "piper x1.15" in table
    saved = json.loads((tmp_path / "asr.json").read_text())
    assert [(run["bias"], run["context"]) for run in saved["runs"]] == [
        (False, False), (True, False), (True, True)]
    assert all(run["utterances"] == 9 and run["phantoms"] == 0 for run in saved["runs"])
    assert all(run["wer_held_out"] is not None for run in saved["runs"])
    assert (tmp_path / "asr.png").stat().st_size > 10_000
    assert len(runs[1].heard) == 9
