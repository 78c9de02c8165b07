"""WAV files in and out: any PCM WAV read as apace's one audio format (16 kHz mono int16),
and int16 audio written as a 16-bit mono WAV.

This is the file half of audio (pipeline/audio.py keeps the pure sample-array half:
resampling, frames, loudness), so that pipeline/ opens no file of its own. The callers are
the ways in: `apace talk` and `apace ask --out`, the benches, the tests.
"""

from __future__ import annotations

import io
import wave
from pathlib import Path

import numpy as np

from pipeline.audio import resample, to_int16
from pipeline.events import SAMPLE_RATE, Pcm


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


def write_wav(path: str | Path, pcm: Pcm, rate: int = SAMPLE_RATE) -> None:
    """`pcm` as a 16-bit mono WAV file at `rate`."""
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(pcm.astype("<i2").tobytes())
