"""WAV files in and out (models/wav_files.py): any PCM WAV read as 16 kHz mono int16, with
an AudioError that says what is wrong with one apace cannot use."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import numpy as np
import pytest

from models.wav_files import AudioError, read_wav, write_wav
from pipeline.audio import to_int16
from pipeline.events import SAMPLE_RATE


def wav_bytes(raw: bytes, *, rate: int, channels: int = 1, width: int = 2) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(channels)
        wav.setsampwidth(width)
        wav.setframerate(rate)
        wav.writeframes(raw)
    return out.getvalue()


def sine(freq: float, rate: int, seconds: float = 1.0, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return amplitude * np.sin(2 * np.pi * freq * t)


def dominant_hz(pcm: np.ndarray, rate: int = SAMPLE_RATE) -> float:
    spectrum = np.abs(np.fft.rfft(pcm.astype(np.float64)))
    return float(np.fft.rfftfreq(len(pcm), 1 / rate)[spectrum.argmax()])


def encode(samples: np.ndarray, width: int) -> bytes:
    """Float samples in [-1, 1] as little-endian PCM of `width` bytes (8-bit is unsigned)."""
    if width == 1:
        return (np.round(samples * 127) + 128).astype(np.uint8).tobytes()
    if width == 2:
        return np.round(samples * 32767).astype("<i2").tobytes()
    if width == 3:
        ints = np.round(samples * (2**23 - 1)).astype("<i4")
        return np.frombuffer(ints.tobytes(), np.uint8).reshape(-1, 4)[:, :3].tobytes()
    return np.round(samples * (2**31 - 1)).astype("<i4").tobytes()


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_read_wav_decodes_8_16_24_and_32_bit_samples_to_the_same_int16(width: int) -> None:
    levels = np.array([0.0, 0.5, -0.5, 0.25, -0.99])
    pcm = read_wav(wav_bytes(encode(levels, width), rate=SAMPLE_RATE, width=width))
    assert pcm.dtype == np.int16
    tolerance = 300 if width == 1 else 2  # 8-bit has only 256 levels
    assert np.allclose(pcm, levels * 32767, atol=tolerance)


def test_read_wav_decodes_8_bit_as_unsigned_with_128_as_silence() -> None:
    pcm = read_wav(wav_bytes(bytes([128, 0, 255]), rate=SAMPLE_RATE, width=1))
    assert pcm[0] == 0
    assert pcm[1] == -32767
    assert pcm[2] > 32000


def test_read_wav_mixes_stereo_down_to_the_mean_of_its_channels() -> None:
    left, right = np.full(1600, 0.5), np.full(1600, 0.25)
    stereo = np.stack([left, right], axis=1).reshape(-1)
    pcm = read_wav(wav_bytes(encode(stereo, 2), rate=SAMPLE_RATE, channels=2))
    assert len(pcm) == 1600
    assert np.allclose(pcm, 0.375 * 32767, atol=2)


@pytest.mark.parametrize("rate", [8_000, 22_050, 44_100, 48_000])
def test_read_wav_resamples_any_rate_to_16khz_keeping_duration_and_pitch(rate: int) -> None:
    pcm = read_wav(wav_bytes(encode(sine(440, rate), 2), rate=rate))
    assert abs(len(pcm) - SAMPLE_RATE) <= 2  # one second in, one second out
    assert dominant_hz(pcm) == pytest.approx(440, abs=2)


def test_read_wav_reads_a_file_path(tmp_path: Path) -> None:
    path = tmp_path / "a.wav"
    path.write_bytes(wav_bytes(encode(sine(300, 48_000, 0.5), 2), rate=48_000, channels=1))
    assert len(read_wav(path)) == 8000
    assert len(read_wav(str(path))) == 8000


def test_write_wav_then_read_wav_round_trips_16khz_audio_within_one_step(tmp_path: Path) -> None:
    pcm = to_int16(sine(500, SAMPLE_RATE, 0.1))
    write_wav(tmp_path / "out.wav", pcm)
    back = read_wav(tmp_path / "out.wav")
    assert len(back) == len(pcm)
    assert np.abs(back.astype(int) - pcm).max() <= 1  # x/32768*32767 truncates by one step


def test_read_wav_rejects_data_that_is_not_a_wav_file() -> None:
    with pytest.raises(AudioError, match="not a PCM WAV file"):
        read_wav(b"ID3\x03\x00 this is an mp3, honest" * 4)


def test_read_wav_rejects_an_empty_file_without_an_empty_detail(tmp_path: Path) -> None:
    path = tmp_path / "empty.wav"
    path.write_bytes(b"")
    with pytest.raises(AudioError, match=r"empty\.wav is not a PCM WAV file") as raised:
        read_wav(path)
    assert "()" not in str(raised.value)


def test_read_wav_rejects_a_wav_with_no_samples() -> None:
    with pytest.raises(AudioError, match="holds no audio samples"):
        read_wav(wav_bytes(b"", rate=SAMPLE_RATE))


def test_read_wav_rejects_a_file_cut_inside_its_header() -> None:
    with pytest.raises(AudioError, match="not a PCM WAV file"):
        read_wav(wav_bytes(b"\x00\x01" * 100, rate=SAMPLE_RATE)[:30])


@pytest.mark.parametrize("cut", [1, 2, 3, 101])
def test_read_wav_reads_the_whole_frames_of_a_truncated_stereo_file(cut: int) -> None:
    """A download cut mid-frame keeps its complete frames instead of crashing."""
    stereo = np.full(2 * 1000, 0.5)
    data = wav_bytes(encode(stereo, 2), rate=SAMPLE_RATE, channels=2)[:-cut]
    pcm = read_wav(data)
    assert len(pcm) == 1000 - (cut + 3) // 4  # 4 bytes per stereo frame
    assert np.allclose(pcm, 0.5 * 32767, atol=2)


def test_read_wav_names_a_missing_file() -> None:
    with pytest.raises(AudioError, match=r"cannot open /nonexistent/x\.wav"):
        read_wav("/nonexistent/x.wav")


def test_audio_error_is_a_value_error() -> None:
    assert issubclass(AudioError, ValueError)
