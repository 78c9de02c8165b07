"""ASR: what a conversation needs of speech recognition (`Transcriber`), its options, and
the text clean-up every transcript gets. The faster-whisper adapter, with its encoder
window sizing and vocabulary bias, is models/whisper.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pipeline.events import Pcm

DEFAULT_VOCABULARY = (
    "Timer, alarm, minutes, remind me, shopping list, convert, Celsius, Fahrenheit, cups,"
    " tablespoons, teaspoons, ounces, grams, pounds, spell, percent, pause, resume, cancel,"
    " add, today's date."
)
"""What people ask this assistant for (the skills' words), ~45 Whisper tokens. The short
verbs said first were the words tiny.en missed most in espeak-ng voices ("post timer",
"council my timer", "and eggs to the list", "what's to get made"): docs/quality.md."""
TALK_OVER_VOCABULARY = "Mm-hm. Uh-huh. Yeah. Okay. Right. I see. Stop. Wait. " + DEFAULT_VOCABULARY
"""What is said over a reply: a listener's backchannel, or a request to stop, first. Piper's
"Mm-hm." over a reply, three speaking rates: tiny.en heard "And then make some." 3 of 3
times with DEFAULT_VOCABULARY, "Mm-hm." 2 of 3 with this; "Mhm." "M. H. N.", "And may
chin." against "Mm-h-n." 2 of 3; whisper-base's "Uh-huh." "Ah." against "Uh-huh." 2 of 3;
none of 13 other backchannels, stops and short questions heard worse."""


class Transcriber(Protocol):
    """Speech → text for one utterance. Blocking: call it from a model worker.

    `context`: text the user is likely to say or refer to (the last exchange); "" for none.
    `vocabulary`: the words this utterance is likely to hold, instead of the usual ones
    (None: the usual; TALK_OVER_VOCABULARY for words said over a reply)."""

    def transcribe(self, pcm: Pcm, context: str = "", *, vocabulary: str | None = None) -> str: ...


@runtime_checkable
class TranscribesMany(Protocol):
    """A Transcriber that can transcribe several utterances in one batch (pipeline.listen.ear)."""

    def transcribe_many(self, pcms: Sequence[Pcm]) -> list[str]: ...


@dataclass(frozen=True, kw_only=True)
class AsrOptions:
    """How Whisper transcribes. Why the defaults are what they are: docs/quality.md (the
    bias), docs/rooms.md (the noisy-room ear), docs/latency.md (the window)."""

    windows_s: tuple[int, ...] = (10, 20, 30)
    """Encoder windows to choose from (seconds); the smallest that holds the audio wins."""
    beam_size: int = 3
    """Beam width, 1-10 (default 3; 1 = greedy, fastest)."""
    noisy_beam_size: int = 1
    """The noisy-room ear's beam width (models.load: a sturdier Whisper for streams whose
    room is noisy); default 1, greedy."""
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
    """Bias recognition toward `vocabulary` (and the call's context, with `use_context`);
    default True. False: Whisper's plain prompt."""
    use_context: bool = False
    """Also read the call's `context` (the last exchange) under the bias (default False:
    it made Whisper base mishear more and repeat itself)."""
    prompt_tokens: int = 64
    """Token budget for vocabulary + context; the vocabulary is cut at a comma, the context
    keeps its most recent tokens."""
    bias_no_speech_threshold: float = 0.4
    """Under a bias prompt, an utterance whose no-speech probability is above this is '',
    however sure Whisper is of its words (default 0.4)."""

    def __post_init__(self) -> None:
        if not self.windows_s or not all(1 <= window <= 30 for window in self.windows_s):
            # faster-whisper pads to 30 s: no window holds more.
            raise ValueError(f"Whisper windows must be 1-30 seconds, got {self.windows_s}")
        if not 1 <= self.beam_size <= 10 or not 1 <= self.noisy_beam_size <= 10:
            raise ValueError("Whisper's beam width must be 1-10, got "
                             f"{self.beam_size} (noisy-room ear: {self.noisy_beam_size})")


@dataclass(frozen=True)
class AsrTiming:
    """Where one windowed transcription's time went (for `apace bench --asr`)."""

    window_s: int
    encode_ms: float
    decode_ms: float
    prompt_tokens: int


_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")


_GROUP_LOOP = re.compile(r"(,\d{3})\1{3,},?")
"""A number's 3-digit group four or more times over: "250,000,000,000,000,…"."""
_WORD_LOOP = re.compile(r"\b(\w+)(?:[\s,]+\1\b){3,}", re.IGNORECASE)
"""A word four or more times in a row: "the the the the"."""


_PHRASE_LOOP = re.compile(r"\b((?:[\w']+[\s,]+){1,5}[\w']+)(?:[\s,]+\1\b){2,}(?P<tail>[\s,]+[\w' ]*)?",
                          re.IGNORECASE)
"""A phrase of 2-6 words three or more times in a row, perhaps with a cut-off copy after it:
"pause to hours timer pause to hours timer pause to hours timer pause to hours"."""


def _one_phrase(m: re.Match[str]) -> str:
    phrase, tail = m.group(1), (m.group("tail") or "")
    cut_copy = tail.strip(" ,") and phrase.lower().startswith(tail.strip(" ,").lower())
    return phrase if cut_copy else phrase + tail


def drop_loops(text: str) -> str:
    """`text` without the decoder's loops: in background talk tiny.en wrote "calculate 8%
    of 250,000,000,000,…" (the group 40 times, to the token cap) for "… of two hundred
    fifty" — read as unfinished, the turn waited the longest endpoint and was answered
    wrong. A group run loses the whole run (where the loop began is unknowable; the number
    before it was heard); a word or phrase run keeps one."""
    looped = _PHRASE_LOOP.sub(_one_phrase, _WORD_LOOP.sub(r"\1", _GROUP_LOOP.sub("", text)))
    return looped.rstrip(" ,") if looped != text else text


def drop_repeats(text: str) -> str:
    """`text` without a sentence said again right after itself, and without a trailing
    fragment that restarts the first sentence: under a prompt, tiny.en sometimes writes
    "What about Italy? What about Italy?" or "How do you spell necessary? How do you spell
    necessary? How do" for one question (17 of 87 live turns, measured). Loops go too
    (`drop_loops`)."""
    text = drop_loops(text)
    said = [p for p in _SENTENCE_END.split(text.strip()) if p]
    pieces = [_once(p) for p in said]
    kept: list[str] = []
    for piece in pieces:
        key = _key(piece)
        if kept and key == _key(kept[-1]):
            continue
        ends = piece[-1:] in ".?!"
        if kept and not ends and key and _key(kept[0]).startswith(key):
            continue  # a repeat cut short by the token cap
        kept.append(piece)
    return " ".join(kept) if kept and (len(kept) < len(pieces) or pieces != said) else text


def _once(sentence: str) -> str:
    """ "Pause my timer, pause my timer." said once: a clause repeated after a comma."""
    clauses = sentence.split(",")
    first = _key(clauses[0])
    if len(clauses) > 1 and re.search("[a-z]", first) and all(_key(c) == first for c in clauses):
        end = sentence.rstrip()[-1:]
        return clauses[0].strip() + (end if end in ".?!" else "")
    return sentence


def _key(sentence: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", sentence.lower()))

