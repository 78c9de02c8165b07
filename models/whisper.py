"""ASR on faster-whisper (CTranslate2): one utterance, the encoder window sized to it.

faster-whisper pads every input to Whisper's 30 s window. On CPU the tiny encoder costs
~280 ms for 30 s but ~34 ms for 10 s, with the same transcript (measured on a 2-core CPU). So utterances
up to 30 s are encoded in the smallest of `windows_s` that holds them; windows under 10 s
made Whisper repeat itself, so 10 s is the floor. Longer audio takes faster-whisper's
ordinary chunked path, unbiased.

Vocabulary bias: Whisper reads text before its start-of-transcript token as what was said
before, and leans toward its words. `AsrOptions.vocabulary` (the skills' words) goes there as
faster-whisper's `hotwords` and, with `use_context`, a call's `context` (the last exchange)
as the previous text, both through faster-whisper's own `get_prompt`, within a token budget:
every prompt token is read by the decoder on every utterance. Measured by
`apace bench --asr` (2-core CPU, 230 clips): WER 14.1% -> 12.3% on tiny.en, 13.5% -> 10.8%
on base, held-out lines alike, for +7 / +3 ms of decoding.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pipeline.events import SAMPLE_RATE, Pcm
from pipeline.listen.asr import AsrOptions, AsrTiming, drop_repeats

if TYPE_CHECKING:
    from faster_whisper import WhisperModel

log = logging.getLogger(__name__)


class PromptMaker(Protocol):
    """The part of faster-whisper's WhisperModel that lays out a decoder prompt."""

    def get_prompt(self, tokenizer: Any, previous_tokens: list[int],
                   without_timestamps: bool = ..., prefix: str | None = ...,
                   hotwords: str | None = ...) -> list[int]: ...


def fit_terms(encode: Callable[[str], list[int]], text: str, budget: int) -> str:
    """The longest run of `text`'s leading comma-separated terms whose tokens (encoded the
    way faster-whisper encodes hotwords: with a leading space) fit in `budget`."""
    terms = [t.strip() for t in text.split(",") if t.strip()]
    for n in range(len(terms), 0, -1):
        kept = ", ".join(terms[:n])
        if len(encode(" " + kept)) <= budget:
            return kept
    return ""


def bias_prompt(model: PromptMaker, tokenizer: Any, *, vocabulary: str, context: str,
                budget: int) -> list[int]:
    """The decoder prompt: `vocabulary` as hotwords, then the end of `context` as the
    previous text, both within `budget` tokens; with neither, exactly the plain prompt."""
    hotwords = fit_terms(tokenizer.encode, vocabulary, budget)
    left = budget - (len(tokenizer.encode(" " + hotwords)) if hotwords else 0)
    context = context.strip()
    previous = tokenizer.encode(" " + context)[-left:] if context and left > 0 else []
    return model.get_prompt(tokenizer, previous, without_timestamps=True,
                            hotwords=hotwords or None)


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
        self._plain: list[int] = model.get_prompt(self._tokenizer, [], without_timestamps=True)
        self._biased = self._bias_prompt("")
        self._vocabularies: dict[str, list[int]] = {}
        self.last_timing: AsrTiming | None = None
        """The latest windowed call's timing (one worker per instance, so it is that call's)."""

    def prompt(self, context: str = "") -> list[int]:
        """The decoder prompt for an utterance heard after `context`."""
        if not self.options.bias:
            return self._plain
        if self.options.use_context and context.strip():
            return self._bias_prompt(context)
        return self._biased

    def _bias_prompt(self, context: str) -> list[int]:
        return bias_prompt(self.model, self._tokenizer, vocabulary=self.options.vocabulary,
                           context=context, budget=self.options.prompt_tokens)

    def transcribe(self, pcm: Pcm, context: str = "", *, vocabulary: str | None = None) -> str:
        audio = pcm.astype(np.float32) / 32768.0
        window = self._window(len(audio))
        if window is None:
            return self._transcribe_long(audio)
        prompt = self.prompt(context) if vocabulary is None else self._vocabulary(vocabulary)
        return self._transcribe_windows([audio], window, [prompt])[0]

    def _vocabulary(self, vocabulary: str) -> list[int]:
        """The prompt biased toward `vocabulary` instead of the usual (made once)."""
        if not self.options.bias:
            return self._plain
        if vocabulary not in self._vocabularies:
            self._vocabularies[vocabulary] = bias_prompt(
                self.model, self._tokenizer, vocabulary=vocabulary, context="",
                budget=self.options.prompt_tokens)
        return self._vocabularies[vocabulary]

    def transcribe_many(self, pcms: Sequence[Pcm]) -> list[str]:
        """Several utterances, each transcribed as `transcribe` would, those that take the
        same encoder window in one encoder and decoder batch (pipeline/listen/ear.py batches jobs
        of several conversations that are due together; `make bench-batching` measures
        what a batch saves)."""
        audios = [pcm.astype(np.float32) / 32768.0 for pcm in pcms]
        texts = [""] * len(audios)
        by_window: dict[int | None, list[int]] = {}
        for i, audio in enumerate(audios):
            by_window.setdefault(self._window(len(audio)), []).append(i)
        for window, group in by_window.items():
            if window is None:
                for i in group:
                    texts[i] = self._transcribe_long(audios[i])
                continue
            done = self._transcribe_windows([audios[i] for i in group], window,
                                            [self.prompt("")] * len(group))
            for i, text in zip(group, done, strict=True):
                texts[i] = text
        return texts

    def _window(self, samples: int) -> int | None:
        """The smallest encoder window (s) that holds `samples`; None: longer than all."""
        seconds = samples / SAMPLE_RATE
        return next((w for w in sorted(self.options.windows_s) if w >= seconds + 0.1), None)

    def _transcribe_windows(self, audios: Sequence[np.ndarray], window_s: int,
                            prompts: list[list[int]]) -> list[str]:
        import ctranslate2

        start = time.perf_counter()
        frames = window_s * 100  # 10 ms hop
        features = np.stack([self._features(audio, frames) for audio in audios])
        encoded = self.model.model.encode(ctranslate2.StorageView.from_array(features),
                                          to_cpu=False)
        encoded_at = time.perf_counter()
        seconds = max(len(audio) for audio in audios) / SAMPLE_RATE
        # max_length counts the prompt: the plain prompt keeps its old cap, a longer one
        # gets its extra tokens on top, so biasing never shortens a transcript.
        cap = min(224, 8 + math.ceil(seconds * self.options.tokens_per_second))
        results: list[Any] = self.model.model.generate(
            encoded,
            prompts,
            beam_size=self.options.beam_size,
            max_length=cap + max(map(len, prompts)) - len(self._plain),
            suppress_blank=True,
            suppress_tokens=[-1],
            return_scores=True,
            return_no_speech_prob=True,
        )
        self.last_timing = AsrTiming(window_s, (encoded_at - start) * 1000,
                                     (time.perf_counter() - encoded_at) * 1000, len(prompts[0]))
        return [self._text(result, biased=prompt != self._plain)
                for result, prompt in zip(results, prompts, strict=True)]

    def _features(self, audio: np.ndarray, frames: int) -> np.ndarray:
        """Log-mel features of `audio`, padded or cut to `frames` (the encoder's window)."""
        features = self.model.feature_extractor(audio)[:, :-1]
        features = np.pad(features, ((0, 0), (0, max(0, frames - features.shape[1]))))
        return np.ascontiguousarray(features[:, :frames])

    def _text(self, result: Any, *, biased: bool) -> str:
        tokens = [t for t in result.sequences_ids[0] if t < self._tokenizer.eot]
        text: str = self._tokenizer.decode(tokens).strip()
        log_prob = result.scores[0] / max(1, len(tokens) + 1) if result.scores else 0.0
        no_speech = result.no_speech_prob
        if biased:
            silent = no_speech > self.options.bias_no_speech_threshold
        elif self.options.beam_size > 1:
            # A beam finds a confident hallucination ("Thank you." on a fan's noise, at
            # no-speech p 0.95): its log-prob says nothing, as under a prompt.
            silent = no_speech > self.options.no_speech_threshold
        else:
            silent = (no_speech > self.options.no_speech_threshold
                      and log_prob < self.options.log_prob_threshold)
        if silent or not any(c.isalnum() for c in text):  # ". . . ." on pink noise
            log.debug("no speech (p=%.2f, logprob=%.2f): %r", no_speech, log_prob, text)
            return ""
        return drop_repeats(text)

    def _transcribe_long(self, audio: np.ndarray) -> str:
        # Unbiased: faster-whisper's own no-speech rule is the one a prompt defeats (see
        # `bias_no_speech_threshold`), and utterances this long are rare for an assistant.
        segments, _ = self.model.transcribe(
            audio,
            language=self.options.language,
            beam_size=self.options.beam_size,
            vad_filter=False,
            without_timestamps=True,
            condition_on_previous_text=False,
        )
        return " ".join(segment.text.strip() for segment in segments).strip()
