"""Audio at the edges: WAV reading to 16 kHz mono, resampling, framing, loudness."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import numpy as np
import pytest

from pipeline.audio import (
    FLOOR_DBFS,
    AudioError,
    FrameCutter,
    StreamResampler,
    dbfs,
    frames,
    read_wav,
    resample,
    rms_dbfs,
    to_int16,
    write_wav,
)
from pipeline.events import FRAME_SAMPLES, SAMPLE_RATE


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


def test_resample_scales_int16_to_float_and_leaves_an_equal_rate_alone() -> None:
    out = resample(np.array([16384, -32768], np.int16), SAMPLE_RATE, SAMPLE_RATE)
    assert out.dtype == np.float32
    assert out.tolist() == [0.5, -1.0]


def test_resample_changes_the_length_by_the_rate_ratio() -> None:
    out = resample(sine(200, 48_000), 48_000, SAMPLE_RATE)
    assert out.dtype == np.float32
    assert len(out) == SAMPLE_RATE


def test_to_int16_clips_out_of_range_samples() -> None:
    assert to_int16(np.array([2.0, -2.0, 0.0])).tolist() == [32767, -32767, 0]


def test_stream_resampler_in_chunks_matches_resampling_all_at_once() -> None:
    """No clicks at chunk borders: chunked output equals one-shot output."""
    signal = sine(440, 22_050).astype(np.float32)
    whole = resample(signal, 22_050, SAMPLE_RATE)
    stream = StreamResampler(22_050, SAMPLE_RATE)
    chunks = [stream.push(c) for c in np.array_split(signal, 37)]
    chunks.append(stream.push(np.zeros(0, np.float32), last=True))
    joined = np.concatenate(chunks)
    assert len(joined) == len(whole)
    assert np.allclose(joined, whole, atol=1e-6)


def test_stream_resampler_accepts_int16_chunks_as_full_scale() -> None:
    signal = sine(440, 22_050)
    stream_f = StreamResampler(22_050, SAMPLE_RATE)
    stream_i = StreamResampler(22_050, SAMPLE_RATE)
    out_f = np.concatenate([stream_f.push(signal.astype(np.float32)),
                            stream_f.push(np.zeros(0, np.float32), last=True)])
    out_i = np.concatenate([stream_i.push((signal * 32768).astype(np.int16)),
                            stream_i.push(np.zeros(0, np.int16), last=True)])
    assert np.allclose(out_f, out_i, atol=1e-3)


def test_frames_cuts_20ms_frames_and_pads_the_last() -> None:
    pcm = np.arange(1, 2 * FRAME_SAMPLES + 11, dtype=np.int16)
    cut = list(frames(pcm))
    assert [len(f) for f in cut] == [FRAME_SAMPLES] * 3
    assert np.array_equal(np.concatenate(cut)[: len(pcm)], pcm)
    assert not cut[-1][10:].any()


def test_frames_can_drop_or_keep_a_short_last_frame_at_any_frame_size() -> None:
    pcm = np.arange(1, 1001, dtype=np.int16)
    assert [len(f) for f in frames(pcm, 480, last="drop")] == [480, 480]
    kept = list(frames(pcm, 480, last="keep"))
    assert [len(f) for f in kept] == [480, 480, 40] and np.array_equal(np.concatenate(kept), pcm)
    assert list(frames(pcm[:0])) == [] and list(frames(pcm[:100], last="drop")) == []
    floats = list(frames(np.ones(700, np.float32), last="pad"))
    assert floats[-1].dtype == np.float32 and floats[-1][60:].sum() == 0


def test_a_frame_cutter_cuts_a_stream_in_any_pieces_into_the_same_frames() -> None:
    pcm = np.arange(1, 3 * FRAME_SAMPLES + 51, dtype=np.int16)
    cutter = FrameCutter()
    got = [f for piece in np.array_split(pcm, [7, 500, 501, 900]) for f in cutter.push(piece)]
    assert [len(f) for f in got] == [FRAME_SAMPLES] * 3
    rest = cutter.flush()
    assert len(rest) == 1 and np.array_equal(rest[0][:50], pcm[-50:]) and not rest[0][50:].any()
    assert cutter.flush() == [] and cutter.push(pcm[:10]) == []  # a new stream after flush
    assert np.array_equal(np.concatenate(got), pcm[: 3 * FRAME_SAMPLES])


def test_a_frame_cutter_takes_float_windows_of_its_own_size() -> None:
    cutter = FrameCutter(512, np.float32)
    windows = cutter.push(np.ones(1100, np.float32)) + cutter.push(np.ones(100, np.float32))
    assert [(len(w), w.dtype) for w in windows] == [(512, np.float32)] * 2


def test_rms_dbfs_of_full_scale_square_is_zero_and_of_silence_is_the_floor() -> None:
    assert rms_dbfs(np.array([32767, -32767] * 100, np.int16)) == pytest.approx(0, abs=0.01)
    assert rms_dbfs(np.zeros(100, np.int16)) == -120.0
    assert rms_dbfs(np.zeros(0, np.int16)) == -120.0
    half = to_int16(np.full(100, 0.5))
    assert rms_dbfs(half) == pytest.approx(-6.02, abs=0.01)
    assert rms_dbfs(np.array([1], np.int16)) == pytest.approx(-90.31, abs=0.01)  # one LSB


def test_dbfs_of_a_mean_square_is_floored_and_agrees_with_rms_dbfs() -> None:
    assert dbfs(1.0) == 0.0 and dbfs(0.0) == dbfs(-1.0) == dbfs(1e-13) == FLOOR_DBFS == -120.0
    assert dbfs(0.01) == pytest.approx(-20.0)
    pcm = np.random.default_rng(0).integers(-3000, 3000, 320).astype(np.int16)
    assert rms_dbfs(pcm) == pytest.approx(dbfs(float(np.mean((pcm / 32768.0) ** 2))))
