"""Audio as sample arrays: resampling, cutting into 20 ms frames, loudness. Pure: reading
and writing WAV files is models/wav_files.py's.

Resampling uses soxr (streaming, high quality); nothing here is hand-rolled DSP. Every
place that cuts audio into frames or measures a level in dBFS does it here (`frames`,
`FrameCutter`, `rms_dbfs`), so a frame and a decibel mean the same thing everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt
import soxr

from pipeline.events import FRAME_SAMPLES, Pcm

S = TypeVar("S", bound=np.generic)

FLOOR_DBFS = -120.0
"""The level of digital silence (and of anything quieter)."""


def resample(samples: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """Float or int16 samples from `rate_in` to `rate_out` (float32 out)."""
    data = samples.astype(np.float32) / (32768.0 if samples.dtype == np.int16 else 1.0)
    if rate_in == rate_out:
        return data
    return np.asarray(soxr.resample(data, rate_in, rate_out), dtype=np.float32)


def to_int16(samples: np.ndarray) -> Pcm:
    pcm: Pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).astype(np.int16)
    return pcm


def frames(samples: npt.NDArray[S], size: int = FRAME_SAMPLES, *,
           last: Literal["pad", "drop", "keep"] = "pad") -> Iterator[npt.NDArray[S]]:
    """`samples` cut into frames of `size` (default: 20 ms at 16 kHz).

    A last frame shorter than `size` is padded with silence ("pad": what is sent or played
    needs whole frames), left out ("drop": a measure per whole frame), or kept short
    ("keep": audio passed on, or measured, as it came).
    """
    for start in range(0, len(samples), size):
        frame = samples[start : start + size]
        if len(frame) < size:
            if last == "drop":
                return
            if last == "pad":
                frame = np.pad(frame, (0, size - len(frame)))
        yield frame


class FrameCutter:
    """A stream that arrives in pieces of any length, as whole frames of `size` samples."""

    def __init__(self, size: int = FRAME_SAMPLES, dtype: type[np.generic] = np.int16) -> None:
        self.size = size
        self._pending: npt.NDArray[Any] = np.zeros(0, dtype)

    def push(self, samples: npt.NDArray[Any]) -> list[npt.NDArray[Any]]:
        """The whole frames that `samples` completes; the rest waits for the next push.
        Frames are copies: none holds on to a caller's (possibly large) buffer."""
        pending = np.concatenate([self._pending, samples]) if self._pending.size else samples
        whole = len(pending) - len(pending) % self.size
        self._pending = pending[whole:].copy()
        return [pending[i : i + self.size].copy() for i in range(0, whole, self.size)]

    def flush(self) -> list[npt.NDArray[Any]]:
        """The stream ended: what is left as one frame padded with silence (none if nothing
        is left); the next push starts afresh."""
        rest, self._pending = self._pending, self._pending[:0]
        return list(frames(rest, self.size))


def dbfs(mean_square: float) -> float:
    """A mean square (full scale = 1) in dB below full scale, floored at FLOOR_DBFS."""
    return max(FLOOR_DBFS, float(10.0 * np.log10(mean_square))) if mean_square > 0 else FLOOR_DBFS


def rms_dbfs(pcm: Pcm) -> float:
    """Loudness of int16 audio in dB below full scale (32768), FLOOR_DBFS for silence."""
    if pcm.size == 0:
        return FLOOR_DBFS
    return dbfs(float(np.mean((pcm.astype(np.float64) / 32768.0) ** 2)))


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
