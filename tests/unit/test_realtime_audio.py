"""Audio at the transports' edge (app.transports.audio): formats checked, 24 kHz and
stereo cut into the pipeline's 16 kHz frames without losing time, reply audio back at the
client's rate (its pacing: tests/unit/test_pacing.py)."""

from __future__ import annotations

import numpy as np
import pytest

from app.transports.audio import FormatError, Inbound, Outbound, PcmFormat
from pipeline.events import FRAME_SAMPLES


@pytest.mark.parametrize("kwargs, message", [
    ({"rate": 4000}, "rate 4000"),
    ({"rate": 16000, "width": 3}, "16-bit"),
    ({"rate": 16000, "channels": 6}, "6 channels"),
    ({"rate": "16000"}, "integer"),
    ({"rate": True}, "integer"),
])
def test_formats_apace_cannot_take_are_refused_with_the_reason(kwargs: dict, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        PcmFormat(**kwargs)


def tone(rate: int, seconds: float, channels: int = 1) -> bytes:
    t = np.arange(int(rate * seconds)) / rate
    mono = (np.sin(2 * np.pi * 440 * t) * 8000).astype("<i2")
    return np.repeat(mono[:, None], channels, axis=1).tobytes()


@pytest.mark.parametrize("rate, channels", [(24000, 1), (16000, 1), (48000, 2), (22050, 1)])
def test_inbound_audio_becomes_whole_frames_of_the_same_duration(rate: int, channels: int) -> None:
    inbound = Inbound(PcmFormat(rate=rate, channels=channels))
    data = tone(rate, 1.0, channels)
    frames = []
    for i in range(0, len(data), 2 * channels * 333):  # odd-sized chunks, whole samples
        frames += inbound.push(data[i : i + 2 * channels * 333])
    frames += inbound.flush()
    assert all(len(f) == FRAME_SAMPLES and f.dtype == np.int16 for f in frames)
    assert len(frames) == 50  # one second, however it was cut
    assert inbound.received_s == pytest.approx(1.0)
    level = np.sqrt(np.mean(np.concatenate(frames[5:45]).astype(float) ** 2))
    assert level == pytest.approx(8000 / np.sqrt(2), rel=0.05)  # the tone survives


def test_a_part_sample_is_refused() -> None:
    with pytest.raises(FormatError, match="whole number"):
        Inbound(PcmFormat(rate=24000)).push(b"\x00\x01\x02")


def test_outbound_converts_16k_frames_to_24k_bytes() -> None:
    out = Outbound(24000)
    pcm = np.frombuffer(tone(16000, 1.0), "<i2")
    data = b"".join(out.push(pcm[i : i + 320]) for i in range(0, len(pcm), 320))
    assert 24000 - len(data) / 2 > 100  # the resampler's filter holds some back ...
    data += out.flush()
    assert abs(len(data) / 2 - 24000) < 2  # ... until the stream ends
    assert Outbound(16000).push(pcm[:320]) == pcm[:320].tobytes()
