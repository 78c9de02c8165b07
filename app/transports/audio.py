"""Audio at the edge of the non-WebRTC transports.

Clients send 16-bit PCM at their own rate and channel count (Home Assistant 16 kHz mono,
Realtime clients 24 kHz mono); the pipeline wants 16 kHz mono int16 in 20 ms frames, and
reply audio goes back at the client's rate. Resampling is soxr's, streaming, so chunk
borders do not click. Pacing is plain arithmetic on the times it is given, tested
without a clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pipeline.audio import StreamResampler, to_int16
from pipeline.events import FRAME_MS, FRAME_SAMPLES, SAMPLE_RATE, Pcm

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
        self._pending = np.zeros(0, np.int16)
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
        return self._cut(self._convert(mono, last=False))

    def flush(self) -> list[Pcm]:
        """The audio ended: the rest, the last frame padded with silence."""
        rest = self._cut(self._convert(np.zeros(0, np.float32), last=True))
        if self._pending.size:
            rest.append(np.concatenate([self._pending,
                                        np.zeros(FRAME_SAMPLES - self._pending.size, np.int16)]))
            self._pending = np.zeros(0, np.int16)
        return rest

    def _convert(self, mono: np.ndarray, *, last: bool) -> Pcm:
        if self._resampler is None:
            return np.asarray(mono, dtype=np.int16) if mono.dtype == np.int16 \
                else to_int16(mono / 32768.0)
        return to_int16(self._resampler.push(np.asarray(mono, np.float32) / 32768.0, last=last))

    def _cut(self, pcm: Pcm) -> list[Pcm]:
        pending = np.concatenate([self._pending, pcm]) if self._pending.size else pcm
        whole = len(pending) - len(pending) % FRAME_SAMPLES
        self._pending = pending[whole:].copy()
        return [pending[i : i + FRAME_SAMPLES].copy() for i in range(0, whole, FRAME_SAMPLES)]


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


@dataclass
class Pacer:
    """When the next 20 ms frame of reply audio may leave: on one schedule from the first
    frame of a stretch of audio (no drift), at most `lead_s` ahead of real time.

    Sending at the pace it plays keeps the server's idea of what was heard — the basis of
    barge-in truncation — true for a client that plays what it gets; the lead absorbs
    network jitter. When the speaker runs dry the schedule ends and the next audio starts
    a new one at once; after a stall (a busy loop) it resyncs rather than bursting.
    """

    lead_s: float = 0.06
    frame_s: float = FRAME_MS / 1000
    stall_frames: int = 10
    _start: float | None = field(default=None, init=False)
    _sent: int = field(default=0, init=False)

    def wait_s(self, now: float) -> float:
        """Seconds until the next frame may be sent (0: now)."""
        if self._start is None:
            return 0.0
        return max(0.0, self._start + self._sent * self.frame_s - self.lead_s - now)

    def sent(self, now: float) -> None:
        """A frame left at `now`."""
        if self._start is None:
            self._start = now
        elif now - (self._start + self._sent * self.frame_s) > self.stall_frames * self.frame_s:
            self._start = now - self._sent * self.frame_s
        self._sent += 1

    def idle(self) -> None:
        """Nothing to send: the next frame starts a new schedule."""
        self._start = None
        self._sent = 0

    @property
    def running(self) -> bool:
        return self._start is not None
