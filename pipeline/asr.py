"""ASR: faster-whisper (CTranslate2) on one utterance, with the encoder window sized to it.

faster-whisper pads every input to Whisper's 30 s window. On CPU the tiny encoder costs
~280 ms for 30 s but ~34 ms for 10 s, with the same transcript (DESIGN.md). So utterances
up to 30 s are encoded in the smallest of `windows_s` that holds them; windows under 10 s
made Whisper repeat itself, so 10 s is the floor. Longer audio takes faster-whisper's
ordinary chunked path.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pipeline.events import SAMPLE_RATE, Pcm

if TYPE_CHECKING:
    from faster_whisper import WhisperModel

log = logging.getLogger(__name__)


class Transcriber(Protocol):
    """Speech → text for one utterance. Blocking: call it from a model worker."""

    def transcribe(self, pcm: Pcm) -> str: ...


@dataclass(frozen=True, kw_only=True)
class AsrOptions:
    windows_s: tuple[int, ...] = (10, 20, 30)
    """Encoder windows to choose from (seconds); the smallest that holds the audio wins."""
    beam_size: int = 1
    """1 = greedy, fastest; 5 is Whisper's reference setting, ~2x slower on CPU."""
    language: str = "en"
    no_speech_threshold: float = 0.6
    """Above this no-speech probability an utterance with a low-confidence transcript is
    taken as noise and transcribed as ''."""
    log_prob_threshold: float = -1.0
    tokens_per_second: float = 8.0
    """Cap on generated tokens per second of audio: stops runaway repetition."""


class WhisperTranscriber:
    """A faster-whisper model with window sizing. One instance per model, one worker."""

    def __init__(self, model: WhisperModel, options: AsrOptions | None = None) -> None:
        from faster_whisper.tokenizer import Tokenizer

        self.model = model
        self.options = options or AsrOptions()
        self._tokenizer = Tokenizer(
            model.hf_tokenizer,
            model.model.is_multilingual,
            task="transcribe",
            language=self.options.language,
        )
        self._prompt = model.get_prompt(self._tokenizer, [], without_timestamps=True)

    def transcribe(self, pcm: Pcm) -> str:
        audio = pcm.astype(np.float32) / 32768.0
        seconds = len(audio) / SAMPLE_RATE
        window = next((w for w in sorted(self.options.windows_s) if w >= seconds + 0.1), None)
        if window is None:
            return self._transcribe_long(audio)
        return self._transcribe_window(audio, window)

    def _transcribe_window(self, audio: np.ndarray, window_s: int) -> str:
        import ctranslate2

        features = self.model.feature_extractor(audio)[:, :-1]
        frames = window_s * 100  # 10 ms hop
        features = np.pad(features, ((0, 0), (0, max(0, frames - features.shape[1]))))
        batch = ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None, :, :frames]))
        encoded = self.model.model.encode(batch, to_cpu=False)
        seconds = len(audio) / SAMPLE_RATE
        result: Any = self.model.model.generate(
            encoded,
            [self._prompt],
            beam_size=self.options.beam_size,
            max_length=min(224, 8 + math.ceil(seconds * self.options.tokens_per_second)),
            suppress_blank=True,
            suppress_tokens=[-1],
            return_scores=True,
            return_no_speech_prob=True,
        )[0]
        tokens = [t for t in result.sequences_ids[0] if t < self._tokenizer.eot]
        text: str = self._tokenizer.decode(tokens).strip()
        log_prob = result.scores[0] / max(1, len(tokens) + 1) if result.scores else 0.0
        if (
            result.no_speech_prob > self.options.no_speech_threshold
            and log_prob < self.options.log_prob_threshold
        ):
            log.debug("no speech (p=%.2f, logprob=%.2f): %r", result.no_speech_prob, log_prob, text)
            return ""
        return text

    def _transcribe_long(self, audio: np.ndarray) -> str:
        segments, _ = self.model.transcribe(
            audio,
            language=self.options.language,
            beam_size=self.options.beam_size,
            vad_filter=False,
            without_timestamps=True,
            condition_on_previous_text=False,
        )
        return " ".join(segment.text.strip() for segment in segments).strip()
