"""Noise suppressors for raw microphone audio (pipeline.room.conditioning.Conditioner).

- "webrtc": WebRTC's noise suppression (and optional digital AGC) from the
  `webrtc-noise-gain` wheel: 16 kHz, 10 ms frames, ~0.02 ms of CPU a frame (measured on
  this 2-core box under load; 0.05 ms with AGC on): cheap enough for the event loop.
- "rnnoise": Xiph's RNNoise (a small recurrent network) from the `pyrnnoise` wheel's
  shared library, driven directly through ctypes (the package's Python front end pulls in
  audio-file tools apace does not need). It runs at 48 kHz on 10 ms frames, so each frame
  is resampled up and back: ~0.29 ms of CPU a frame and 10 ms of extra latency.
"""

from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

from models.locate import ModelError
from pipeline.audio import FrameCutter, StreamResampler, to_int16
from pipeline.events import Pcm
from pipeline.room.conditioning import SUB_FRAME, Conditioner

KINDS = ("webrtc", "rnnoise")


def load_conditioner(kind: str, *, suppression: int = 2, gain_dbfs: int = 0) -> Conditioner:
    """A fresh conditioner of `kind` for one stream (ModelError names the missing package)."""
    if kind == "webrtc":
        return WebrtcDenoiser(suppression=suppression, gain_dbfs=gain_dbfs)
    if kind == "rnnoise":
        return RnnoiseDenoiser()
    raise ModelError(f"unknown noise suppressor {kind!r}: choose one of {', '.join(KINDS)}")


class WebrtcDenoiser:
    """WebRTC noise suppression, level 0-4 (2: WebRTC's default), digital AGC off unless
    `gain_dbfs` (target level below full scale, 1-31) is set."""

    def __init__(self, *, suppression: int = 2, gain_dbfs: int = 0) -> None:
        try:
            from webrtc_noise_gain import AudioProcessor
        except ImportError:
            raise ModelError("noise suppression needs the webrtc-noise-gain package:"
                             " pip install webrtc-noise-gain") from None
        self._processor: Any = AudioProcessor(gain_dbfs, suppression)

    def process(self, pcm: Pcm) -> Pcm:
        out = self._processor.Process10ms(pcm.astype("<i2").tobytes()).audio
        return np.frombuffer(out, "<i2").astype(np.int16)


class RnnoiseDenoiser:
    """RNNoise at 48 kHz behind a 16 kHz ⇄ 48 kHz stream resampler."""

    RATE = 48_000

    def __init__(self) -> None:
        self._lib = _rnnoise()
        self._state = self._lib.rnnoise_create(None)
        self._size = int(self._lib.rnnoise_get_frame_size())
        self._up = StreamResampler(16_000, self.RATE)
        self._down = StreamResampler(self.RATE, 16_000)
        self._frames = FrameCutter(self._size, np.float32)
        self._ready = np.zeros(SUB_FRAME, np.float32)  # 10 ms of latency: the resamplers'
        self._out = np.zeros(self._size, np.float32)

    def process(self, pcm: Pcm) -> Pcm:
        pointer = ctypes.POINTER(ctypes.c_float)
        for frame in self._frames.push(self._up.push(pcm) * 32768.0):
            frame = np.ascontiguousarray(frame, np.float32)  # (ctypes reads it raw)
            self._lib.rnnoise_process_frame(self._state, self._out.ctypes.data_as(pointer),
                                            frame.ctypes.data_as(pointer))
            down = self._down.push(self._out / 32768.0)
            self._ready = np.concatenate([self._ready, down])
        out, self._ready = self._ready[: len(pcm)], self._ready[len(pcm) :]
        if len(out) < len(pcm):
            out = np.concatenate([np.zeros(len(pcm) - len(out), np.float32), out])
        return to_int16(out)

    def __del__(self) -> None:
        state, self._state = getattr(self, "_state", None), None
        if state:
            self._lib.rnnoise_destroy(state)


def _rnnoise() -> Any:
    spec = importlib.util.find_spec("pyrnnoise")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    library = next((Path(f) / "librnnoise.so" for f in folders
                    if (Path(f) / "librnnoise.so").exists()), None)
    if library is None:
        raise ModelError("RNNoise needs the pyrnnoise package: pip install --no-deps pyrnnoise")
    lib = ctypes.CDLL(str(library))
    lib.rnnoise_create.argtypes = [ctypes.c_void_p]
    lib.rnnoise_create.restype = ctypes.c_void_p
    lib.rnnoise_destroy.argtypes = [ctypes.c_void_p]
    lib.rnnoise_get_frame_size.restype = ctypes.c_int
    lib.rnnoise_process_frame.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float),
                                          ctypes.POINTER(ctypes.c_float)]
    lib.rnnoise_process_frame.restype = ctypes.c_float
    return lib
