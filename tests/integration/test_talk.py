"""`apace talk` end to end on the real embedded models."""

from __future__ import annotations

import json
import wave
from pathlib import Path

import numpy as np
import pytest

from models.wav_files import read_wav
from pipeline.audio import rms_dbfs
from pipeline.timeline import ASR_FINAL, ENDPOINT, FIRST_CLAUSE, TTFA_SERVER, TTFT, TTUA
from tests.integration.conftest import apace
from tests.wer import wer

pytestmark = pytest.mark.integration

QUESTION = "What is the largest planet in our solar system?"


@pytest.fixture(scope="module")
def answered(ask, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("reply") / "reply.wav"
    result = apace("talk", ask(QUESTION), "--json", "--out", out)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), out


def test_transcript_matches_the_spoken_question(answered) -> None:
    report, _ = answered
    assert wer(QUESTION, report["transcript"]) <= 0.2, report["transcript"]


def test_reply_is_text_and_audible_audio(answered) -> None:
    report, out = answered
    assert len(report["reply"].split()) >= 2
    audio = read_wav(out)
    assert len(audio) / 16000 > 0.5, "reply audio shorter than half a second"
    assert rms_dbfs(audio) > -35.0, "reply audio has no real energy"


def test_timeline_stages_are_ordered_and_add_up(answered) -> None:
    """asr_final ≤ ttft ≤ first clause ≤ TTFA (server) ≤ TTUA, and the endpoint wait plus
    everything after it accounts for the whole TTFA."""
    timeline = answered[0]["timeline_ms"]
    order = [ASR_FINAL, TTFT, FIRST_CLAUSE, TTFA_SERVER, TTUA]
    values = [timeline[name] for name in order]
    assert values == sorted(values), timeline
    assert timeline[ENDPOINT] > 0
    # Speech end is the origin; TTFA cannot come before the endpoint (nothing plays early).
    assert timeline[TTFA_SERVER] >= timeline[ENDPOINT] - 1.0
    assert timeline[TTFA_SERVER] < 5000


def test_two_questions_are_two_turns_of_one_conversation(ask) -> None:
    first, second = "What is the capital of France?", "How do I boil an egg?"
    result = apace("talk", ask(first), ask(second), "--json", "--fast")
    assert result.returncode == 0, result.stderr
    turns = json.loads(result.stdout)["turns"]
    assert len(turns) == 2
    assert wer(first, turns[0]["transcript"]) <= 0.2
    assert wer(second, turns[1]["transcript"]) <= 0.2
    assert all(turn["reply"] for turn in turns)


def test_any_wav_format_is_accepted(ask, tmp_path: Path) -> None:
    """A 44.1 kHz stereo file is resampled and mixed down, not rejected."""
    mono = read_wav(ask("How many days are there in a week?")).astype(np.float32)
    from pipeline.audio import resample, to_int16

    stereo = np.repeat(to_int16(resample(mono / 32768, 16000, 44100))[:, None], 2, axis=1)
    path = tmp_path / "stereo44k.wav"
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(2)
        wav.setsampwidth(2)
        wav.setframerate(44100)
        wav.writeframes(stereo.tobytes())
    result = apace("talk", path, "--json", "--fast")
    assert result.returncode == 0, result.stderr
    assert wer("How many days are there in a week?", json.loads(result.stdout)["transcript"]) <= 0.2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"this is not audio at all", "not a PCM WAV"),
        (b"", "not a PCM WAV"),
    ],
    ids=["not-wav", "empty-file"],
)
def test_unusable_file_is_a_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.wav"
    path.write_bytes(content)
    result = apace("talk", path)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_wav_without_samples_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "nosamples.wav"
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16000)
    result = apace("talk", path)
    assert result.returncode == 2
    assert "no audio samples" in result.stderr and "Traceback" not in result.stderr


def test_silent_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "silence.wav"
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16000)
        wav.writeframes(np.zeros(16000 * 3, np.int16).tobytes())
    result = apace("talk", path)
    assert result.returncode == 2
    assert "no speech found" in result.stderr and "Traceback" not in result.stderr


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    result = apace("talk", tmp_path / "nope.wav")
    assert result.returncode == 2
    assert "cannot open" in result.stderr and "Traceback" not in result.stderr


def test_missing_model_path_names_the_flag_to_fix(ask, tmp_path: Path) -> None:
    result = apace("talk", ask(QUESTION), "--llm-model", tmp_path / "missing.gguf")
    assert result.returncode == 2
    assert "not found" in result.stderr and "--llm-model" in result.stderr
    assert "Traceback" not in result.stderr


def test_model_of_the_wrong_kind_is_a_clear_error(ask, tmp_path: Path) -> None:
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"RIFF" + bytes(100))
    result = apace("talk", ask(QUESTION), "--llm-model", fake)
    assert result.returncode == 2
    assert "not a GGUF" in result.stderr and "Traceback" not in result.stderr


def test_models_command_lists_the_embedded_models() -> None:
    """The suite pins the embedded LLM tier by the environment (tests/conftest.py): the
    listing says so; the other models are the embedded ones."""
    result = apace("models", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["models"]
    assert [row["model"].split()[0] for row in rows] == ["ASR", "LLM", "TTS", "turn"]
    for row in rows:
        assert Path(row["path"]).exists()
        if row["model"].startswith("LLM"):
            assert row["source"] == "tier smollm2-135m (env APACE_LLM_MODEL)"
        else:
            assert row["source"].startswith("embedded")
