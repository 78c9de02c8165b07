"""Input conditioning: the noise suppressors take steady noise down, keep speech, and cost
well under 1 ms of CPU per 10 ms frame (skipped where the package is not installed)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from app.bench.room_sounds import pink_noise
from models.denoise import load_conditioner
from models.piper import PiperSynthesizer
from pipeline.audio import frames, rms_dbfs
from pipeline.room.conditioning import condition, measure_cost

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("kind", "package", "reduction_db"),
                         [("webrtc", "webrtc_noise_gain", 8.0), ("rnnoise", "pyrnnoise", 15.0)])
def test_steady_noise_goes_down_speech_stays_and_it_is_cheap(
        voice: PiperSynthesizer, kind: str, package: str, reduction_db: float) -> None:
    if importlib.util.find_spec(package) is None:  # (pyrnnoise's own module needs more)
        pytest.skip(f"{package} is not installed")
    noise = (pink_noise(16000 * 3, np.random.default_rng(0)) * 0.01 * 32767).astype(np.int16)
    speech = np.concatenate(list(voice.synthesize("What is the boiling point of water?")))
    conditioner = load_conditioner(kind)

    def run(pcm: np.ndarray) -> np.ndarray:
        return np.concatenate([condition(conditioner, frame) for frame in frames(pcm, last="drop")])

    quieted = run(noise)[16000:]  # after a second to learn the noise
    assert rms_dbfs(noise[16000:]) - rms_dbfs(quieted) >= reduction_db
    kept = run(speech)
    assert rms_dbfs(speech) - rms_dbfs(kept) < 6.0
    assert measure_cost(load_conditioner(kind), speech) < 1.0  # ms of CPU per 10 ms


def test_the_automatic_gain_raises_a_soft_talker_and_is_cheap(voice: PiperSynthesizer) -> None:
    """WebRTC's AGC (`--agc 3`): a question spoken 35 dB too softly comes out louder once
    it has adapted (after a second of the room), without clipping. Its digital gain is
    capped: +7 dB measured, not the 35 lost."""
    speech = np.concatenate(list(voice.synthesize("What is the boiling point of water?")))
    soft = (speech.astype(np.float32) * 10 ** (-35 / 20)).astype(np.int16)
    hiss = np.random.default_rng(3).normal(0, 3, 16000 + len(soft))
    pcm = np.clip(np.concatenate([np.zeros(16000), soft]) + hiss, -32768, 32767).astype(np.int16)
    pcm = pcm[: len(pcm) // 320 * 320]
    gain = load_conditioner("webrtc", suppression=0, gain_dbfs=3)
    out = np.concatenate([condition(gain, pcm[i : i + 320]) for i in range(0, len(pcm), 320)])
    assert rms_dbfs(out[16000:]) - rms_dbfs(pcm[16000:]) >= 5.0
    assert np.abs(out).max() < 32767
    agc = load_conditioner("webrtc", suppression=0, gain_dbfs=3)
    assert measure_cost(agc, speech) < 1.0  # ms of CPU per 10 ms
