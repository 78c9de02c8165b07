"""Audio as sample arrays: resampling, framing, loudness (WAV files: test_wav_files.py)."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.audio import (
    FLOOR_DBFS,
    FrameCutter,
    StreamResampler,
    dbfs,
    frames,
    resample,
    rms_dbfs,
    to_int16,
)
from pipeline.events import FRAME_SAMPLES, SAMPLE_RATE


def sine(freq: float, rate: int, seconds: float = 1.0, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return amplitude * np.sin(2 * np.pi * freq * t)


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
