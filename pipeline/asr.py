"""ASR: faster-whisper (CTranslate2) on one utterance, with the encoder window sized to it.

faster-whisper pads every input to Whisper's 30 s window. On CPU the tiny encoder costs
~280 ms for 30 s but ~34 ms for 10 s, with the same transcript (DESIGN.md). So utterances
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
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pipeline.events import SAMPLE_RATE, Pcm

if TYPE_CHECKING:
    from faster_whisper import WhisperModel

log = logging.getLogger(__name__)

DEFAULT_VOCABULARY = (
    "Timer, alarm, minutes, remind me, shopping list, convert, Celsius, Fahrenheit, cups,"
    " tablespoons, teaspoons, ounces, grams, pounds, spell, percent."
)
"""What people ask this assistant for (the skills' words), ~35 Whisper tokens."""


class Transcriber(Protocol):
    """Speech → text for one utterance. Blocking: call it from a model worker.

    `context`: text the user is likely to say or refer to (the last exchange); "" for none."""

    def transcribe(self, pcm: Pcm, context: str = "") -> str: ...


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
    vocabulary: str = DEFAULT_VOCABULARY
    """Comma-separated words and phrases users say to this assistant, read by Whisper before
    each utterance (faster-whisper's `hotwords`). Keep it short: tokens cost decode time."""
    bias: bool = True
    """Bias recognition toward `vocabulary` (and the call's context, with `use_context`).
    False: the plain prompt, exactly as before."""
    use_context: bool = False
    """Also read the call's `context` (the last exchange) under the bias. Off: with the
    previous question as context (`apace bench --asr`), base's WER rose from 10.8% to
    12.9% and it repeated itself ("Send a message to Olivia." four times); tiny.en moved
    by under half a point. Worth turning on only where follow-up questions show a gain."""
    prompt_tokens: int = 64
    """Token budget for vocabulary + context; the vocabulary is cut at a comma, the context
    keeps its most recent tokens."""
    bias_no_speech_threshold: float = 0.4
    """Under a bias prompt, above this no-speech probability the utterance is '', however
    sure Whisper is of its words: the prompt makes what it invents on noise confident
    ("Okay." at log-prob -0.8), so the plain rule's log-prob escape let 42 of 60 noise
    clips through on tiny.en. The prompted no-speech probability itself separates well:
    measured <= 0.32 on 368 speech clips (clean and 5-20 dB SNR pink noise), >= 0.42 on
    81 noise clips (white, pink, brown, hum, clicks), tiny.en and base alike."""

    def __post_init__(self) -> None:
        if not self.windows_s or not all(1 <= window <= 30 for window in self.windows_s):
            # faster-whisper pads to 30 s: no window holds more.
            raise ValueError(f"Whisper windows must be 1-30 seconds, got {self.windows_s}")


@dataclass(frozen=True)
class AsrTiming:
    """Where one windowed transcription's time went (for `apace bench --asr`)."""

    window_s: int
    encode_ms: float
    decode_ms: float
    prompt_tokens: int


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


_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")


def drop_repeats(text: str) -> str:
    """`text` without a sentence said again right after itself, and without a trailing
    fragment that restarts the first sentence: under a prompt, tiny.en sometimes writes
    "What about Italy? What about Italy?" or "How do you spell necessary? How do you spell
    necessary? How do" for one question (17 of 87 live turns, measured)."""
    pieces = [p for p in _SENTENCE_END.split(text.strip()) if p]
    kept: list[str] = []
    for piece in pieces:
        key = _key(piece)
        if kept and key == _key(kept[-1]):
            continue
        ends = piece[-1:] in ".?!"
        if kept and not ends and key and _key(kept[0]).startswith(key):
            continue  # a repeat cut short by the token cap
        kept.append(piece)
    return " ".join(kept) if kept and len(kept) < len(pieces) else text


def _key(sentence: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", sentence.lower()))


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

    def transcribe(self, pcm: Pcm, context: str = "") -> str:
        audio = pcm.astype(np.float32) / 32768.0
        seconds = len(audio) / SAMPLE_RATE
        window = next((w for w in sorted(self.options.windows_s) if w >= seconds + 0.1), None)
        if window is None:
            return self._transcribe_long(audio)
        return self._transcribe_window(audio, window, self.prompt(context))

    def _transcribe_window(self, audio: np.ndarray, window_s: int, prompt: list[int]) -> str:
        import ctranslate2

        start = time.perf_counter()
        features = self.model.feature_extractor(audio)[:, :-1]
        frames = window_s * 100  # 10 ms hop
        features = np.pad(features, ((0, 0), (0, max(0, frames - features.shape[1]))))
        batch = ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None, :, :frames]))
        encoded = self.model.model.encode(batch, to_cpu=False)
        encoded_at = time.perf_counter()
        seconds = len(audio) / SAMPLE_RATE
        # max_length counts the prompt: the plain prompt keeps its old cap, a longer one
        # gets its extra tokens on top, so biasing never shortens a transcript.
        cap = min(224, 8 + math.ceil(seconds * self.options.tokens_per_second))
        result: Any = self.model.model.generate(
            encoded,
            [prompt],
            beam_size=self.options.beam_size,
            max_length=cap + len(prompt) - len(self._plain),
            suppress_blank=True,
            suppress_tokens=[-1],
            return_scores=True,
            return_no_speech_prob=True,
        )[0]
        self.last_timing = AsrTiming(window_s, (encoded_at - start) * 1000,
                                     (time.perf_counter() - encoded_at) * 1000, len(prompt))
        return self._text(result, biased=prompt != self._plain)

    def _text(self, result: Any, *, biased: bool) -> str:
        tokens = [t for t in result.sequences_ids[0] if t < self._tokenizer.eot]
        text: str = self._tokenizer.decode(tokens).strip()
        log_prob = result.scores[0] / max(1, len(tokens) + 1) if result.scores else 0.0
        no_speech = result.no_speech_prob
        if biased:
            silent = no_speech > self.options.bias_no_speech_threshold
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


class FixedTranscript:
    """A transcriber that hears `text` whatever the audio: a turn given as text
    (Conversation.start_turn)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def transcribe(self, pcm: Pcm, context: str = "") -> str:
        return self.text
