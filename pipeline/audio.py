"""Audio at the edges: reading WAV files, resampling, cutting into 20 ms frames.

Resampling uses soxr (streaming, high quality); nothing here is hand-rolled DSP.
"""

from __future__ import annotations

import io
import wave
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import soxr

from pipeline.events import FRAME_SAMPLES, SAMPLE_RATE, Pcm


class AudioError(ValueError):
    """An audio input apace cannot use; the message says what is wrong."""


def read_wav(source: str | Path | bytes) -> Pcm:
    """Any PCM WAV (8/16/24/32-bit, any rate, any channels) → 16 kHz mono int16."""
    name = "the WAV data" if isinstance(source, bytes) else str(source)
    try:
        handle = io.BytesIO(source) if isinstance(source, bytes) else open(source, "rb")
    except OSError as error:
        raise AudioError(f"cannot open {name}: {error.strerror}") from None
    with handle:
        try:
            with wave.open(handle, "rb") as wav:
                rate, channels, width = wav.getframerate(), wav.getnchannels(), wav.getsampwidth()
                raw = wav.readframes(wav.getnframes())
        except (wave.Error, EOFError) as error:
            detail = f" ({error})" if str(error) else ""
            raise AudioError(f"{name} is not a PCM WAV file{detail}") from None
    if rate <= 0 or channels <= 0:
        raise AudioError(f"{name} has an invalid header (rate {rate}, channels {channels})")
    # A truncated file can end mid-frame: keep whole frames only, or reshape fails.
    raw = raw[: len(raw) - len(raw) % (width * channels)]
    samples = _to_float(raw, width, name).reshape(-1, channels).mean(axis=1)
    if samples.size == 0:
        raise AudioError(f"{name} holds no audio samples")
    return to_int16(resample(samples, rate, SAMPLE_RATE))


def _to_float(raw: bytes, width: int, name: str) -> np.ndarray:
    usable = len(raw) - len(raw) % width
    raw = raw[:usable]
    if width == 1:
        return (np.frombuffer(raw, np.uint8).astype(np.float32) - 128.0) / 128.0
    if width == 2:
        return np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0
    if width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        value = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        value = np.where(value >= 1 << 23, value - (1 << 24), value)
        return value.astype(np.float32) / float(1 << 23)
    if width == 4:
        return np.frombuffer(raw, "<i4").astype(np.float32) / float(1 << 31)
    raise AudioError(f"{name} uses {width * 8}-bit samples; use 8, 16, 24 or 32-bit PCM")


def resample(samples: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """Float or int16 samples from `rate_in` to `rate_out` (float32 out)."""
    data = samples.astype(np.float32) / (32768.0 if samples.dtype == np.int16 else 1.0)
    if rate_in == rate_out:
        return data
    return np.asarray(soxr.resample(data, rate_in, rate_out), dtype=np.float32)


def to_int16(samples: np.ndarray) -> Pcm:
    pcm: Pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).astype(np.int16)
    return pcm


def frames(pcm: Pcm) -> Iterator[Pcm]:
    """20 ms frames of 16 kHz audio; the last one is padded with silence."""
    for start in range(0, len(pcm), FRAME_SAMPLES):
        frame = pcm[start : start + FRAME_SAMPLES]
        if len(frame) < FRAME_SAMPLES:
            frame = np.concatenate([frame, np.zeros(FRAME_SAMPLES - len(frame), np.int16)])
        yield frame


def write_wav(path: str | Path, pcm: Pcm, rate: int = SAMPLE_RATE) -> None:
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(pcm.astype("<i2").tobytes())


def rms_dbfs(pcm: Pcm) -> float:
    """Loudness of int16 audio in dB below full scale (-inf dBFS is -120 here)."""
    if pcm.size == 0:
        return -120.0
    rms = float(np.sqrt(np.mean((pcm.astype(np.float64) / 32768.0) ** 2)))
    return max(-120.0, 20.0 * np.log10(rms)) if rms > 0 else -120.0


class StreamResampler:
    """Resamples a stream chunk by chunk without clicks at chunk borders."""

    def __init__(self, rate_in: int, rate_out: int) -> None:
        self._stream = soxr.ResampleStream(rate_in, rate_out, 1, dtype="float32")

    def push(self, samples: np.ndarray, last: bool = False) -> np.ndarray:
        data = samples.astype(np.float32) / (32768.0 if samples.dtype == np.int16 else 1.0)
        return np.asarray(self._stream.resample_chunk(data, last=last), dtype=np.float32)


def speech_end_sample(pcm: Pcm, threshold: int = 300) -> int:
    """Index just past the last sample louder than `threshold` (0 if none)."""
    loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > threshold)
    return int(loud[-1]) + 1 if loud.size else 0
