"""Audio at the edge of the non-WebRTC transports.

Clients send 16-bit PCM at their own rate and channel count (Home Assistant 16 kHz mono,
Realtime clients 24 kHz mono); the pipeline wants 16 kHz mono int16 in 20 ms frames, and
reply audio goes back at the client's rate. Resampling is soxr's, streaming, so chunk
borders do not click. Reply audio is paced by app.transports.pacing, like every other sender's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.audio import FrameCutter, StreamResampler, to_int16
from pipeline.events import SAMPLE_RATE, Pcm

MIN_RATE = 8_000
MAX_RATE = 48_000


class FormatError(ValueError):
    """Audio in a format apace does not take; the message says which and what it takes."""


@dataclass(frozen=True, kw_only=True)
class PcmFormat:
    """Raw little-endian PCM as a client sends it."""

    rate: int
    width: int = 2
    """Bytes per sample: only 16-bit (2) is taken, what every Wyoming and Realtime client
    sends."""
    channels: int = 1

    def __post_init__(self) -> None:
        for name in ("rate", "width", "channels"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise FormatError(f"audio {name} must be an integer, got {value!r:.40}")
        if not MIN_RATE <= self.rate <= MAX_RATE:
            raise FormatError(f"audio rate {self.rate} Hz is not taken ({MIN_RATE}-{MAX_RATE})")
        if self.width != 2:
            raise FormatError(f"audio width {self.width} is not taken: send 16-bit PCM (width 2)")
        if not 1 <= self.channels <= 2:
            raise FormatError(f"audio with {self.channels} channels is not taken (1 or 2)")

    @property
    def frame_bytes(self) -> int:
        """Bytes of one sample on every channel."""
        return self.width * self.channels

    def seconds(self, size: int) -> float:
        return size / (self.frame_bytes * self.rate)


PIPELINE = PcmFormat(rate=SAMPLE_RATE)


class Inbound:
    """A client's PCM bytes → the pipeline's 20 ms frames (16 kHz mono int16)."""

    def __init__(self, fmt: PcmFormat) -> None:
        self.format = fmt
        self._resampler = StreamResampler(fmt.rate, SAMPLE_RATE) if fmt.rate != SAMPLE_RATE else None
        self._frames = FrameCutter()
        self.received_s = 0.0
        """Seconds of client audio taken so far."""

    def push(self, data: bytes) -> list[Pcm]:
        """The whole frames that `data` completes. `data` must hold whole samples."""
        if len(data) % self.format.frame_bytes:
            raise FormatError(f"{len(data)} bytes is not a whole number of "
                              f"{self.format.channels}-channel 16-bit samples")
        self.received_s += self.format.seconds(len(data))
        samples = np.frombuffer(data, "<i2").reshape(-1, self.format.channels)
        mono = samples[:, 0] if self.format.channels == 1 else samples.astype(np.float32).mean(axis=1)
        return self._frames.push(self._convert(mono, last=False))

    def flush(self) -> list[Pcm]:
        """The audio ended: the rest, the last frame padded with silence."""
        return (self._frames.push(self._convert(np.zeros(0, np.float32), last=True))
                + self._frames.flush())

    def _convert(self, mono: np.ndarray, *, last: bool) -> Pcm:
        if self._resampler is None:
            return np.asarray(mono, dtype=np.int16) if mono.dtype == np.int16 \
                else to_int16(mono / 32768.0)
        return to_int16(self._resampler.push(np.asarray(mono, np.float32) / 32768.0, last=last))


class Outbound:
    """Pipeline audio (16 kHz mono int16) → mono 16-bit little-endian bytes at `rate`."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self._resampler = StreamResampler(SAMPLE_RATE, rate) if rate != SAMPLE_RATE else None

    def push(self, pcm: Pcm) -> bytes:
        if self._resampler is None:
            return pcm.astype("<i2").tobytes()
        return to_int16(self._resampler.push(pcm)).astype("<i2").tobytes()

    def flush(self) -> bytes:
        """The stream ended: the audio the resampler still holds (its filter delay, ~20 ms
        at 16→24 kHz); the next push starts a new stream."""
        if self._resampler is None:
            return b""
        tail = to_int16(self._resampler.push(np.zeros(0, np.float32), last=True))
        self.reset()
        return tail.astype("<i2").tobytes()

    def reset(self) -> None:
        """A new stream starts (a new response): no tail of the last one leaks into it."""
        if self._resampler is not None:
            self._resampler = StreamResampler(SAMPLE_RATE, self.rate)
