"""smart-turn v3 (Pipecat's audio end-of-turn model, BSD-2-Clause): P(the turn is over)
from how the last 8 s of speech sound, a Whisper-encoder classifier in ONNX (8.7 MB).

The text turn detector (models/turn_detector.py) reads the words; this one hears the
prosody, which a thinking pause ("remind me to buy … milk") and a finished question
differ in even where the words alone look finished. Its input is Whisper's 80-bin
log-mel of the last 8 s at 16 kHz, zero-padded at the front, the waveform normalised to
zero mean and unit variance first (the model's own feature code does that:
`do_normalize=True`); faster-whisper's feature extractor computes the same spectrogram.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from models.locate import ModelError

SAMPLE_RATE = 16000
WINDOW_S = 8
_NORM_EPS = 1e-7


@dataclass(frozen=True, kw_only=True)
class SmartTurnOptions:
    threads: int = 1
    """onnxruntime intra-op threads (default 1; the timings per thread count are in
    docs/turn_audio.md)."""


def log_mel(audio: np.ndarray) -> np.ndarray:
    """The model's input, (80, 800) float32, for 16 kHz float audio of any length."""
    n = WINDOW_S * SAMPLE_RATE
    x = np.asarray(audio, np.float32)[-n:]
    x = np.pad(x, (n - len(x), 0))
    x = (x - x.mean()) / np.sqrt(x.var() + _NORM_EPS)
    return np.asarray(_extractor()(x, padding=0), np.float32)


@functools.cache
def _extractor() -> Any:
    """faster-whisper's log-mel: the same as the model's own feature code (pipecat's
    compute_whisper_log_mel_features) to 5e-7, measured on 2, 5 and 9 s clips."""
    from faster_whisper.feature_extractor import FeatureExtractor

    return FeatureExtractor(feature_size=80, sampling_rate=SAMPLE_RATE, chunk_length=WINDOW_S)


class SmartTurn:
    """One ONNX session; `complete_probability` is thread-safe (onnxruntime's run is)."""

    def __init__(self, path: Path, options: SmartTurnOptions = SmartTurnOptions()) -> None:
        try:
            import onnxruntime
        except ImportError:
            raise ModelError("smart-turn needs onnxruntime: pip install onnxruntime") from None
        session_options = onnxruntime.SessionOptions()
        session_options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        session_options.inter_op_num_threads = 1
        session_options.intra_op_num_threads = options.threads
        session_options.log_severity_level = 4
        try:
            self._session = onnxruntime.InferenceSession(
                str(path), providers=["CPUExecutionProvider"], sess_options=session_options)
        except Exception as error:  # onnxruntime raises its own untyped errors
            raise ModelError(f"cannot load {path} as smart-turn: {error}. Fix: pass "
                             f"smart-turn-v3.2-cpu.onnx (inside the pipecat-ai wheel, "
                             f"pipecat/audio/turn/smart_turn/data/)") from None

    def complete_probability(self, audio: np.ndarray) -> float:
        """P(the speaker has finished) for 16 kHz float32 audio in [-1, 1] ending now."""
        features = log_mel(audio)[None]
        out = self._session.run(None, {"input_features": features})
        return float(np.asarray(out[0]).reshape(-1)[0])
