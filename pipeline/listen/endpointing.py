"""Adaptive endpointing: how much silence ends a turn depends on what was said.

A transcript that ends a sentence ("…today?") can end the turn after a short silence;
one that trails off ("set a timer for…") waits longer. The transcript comes from the
speculative ASR at silence onset, so the decision costs nothing extra. Where a turn
detector runs (pipeline.listen.turn_detector), its verdict replaces punctuation, which Whisper
also puts after fragments ("What is the capital?"). Pure logic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TRAILING_WORDS = frozenset(
    """a an the and or but so because if then than that which who whose whom where when
    while for to of in on at by with from into about like as is are was were be been am
    my your his her its our their this these those some any um uh er hmm well also plus
    minus times over under between what how why can could would should will shall do does
    did please let me i i'm we you""".split()
)
_WORD = re.compile(r"[\w']+")


@dataclass(frozen=True, kw_only=True)
class EndpointOptions:
    """How much silence ends a turn, by what was said. Durations in milliseconds; why the
    defaults are what they are: docs/latency.md."""

    complete_ms: int = 240
    """Silence that ends a turn whose transcript is a question or exclamation ("?", "!")."""
    statement_ms: int = 1000
    """Silence that ends a turn ending in "." and one the turn detector is unsure of or
    has not judged yet (default 1000)."""
    trailing_ms: int = 1200
    """Silence that ends a turn whose transcript trails off ("…for", "…and", no stop).
    Before a transcript exists (or when it is neither), the VAD's endpoint_ms applies."""
    done_logprob: float = -6.9
    """Turn-detector score (a log probability that the turn is over) at or above which the
    turn is complete and ends after complete_ms (default -6.9; docs/turn_detector.md)."""
    unfinished_logprob: float = -8.8
    """Turn-detector score at or below which the user is mid-sentence (trailing_ms); in
    between, statement_ms (default -8.8; -15 for the plain formulation)."""

    def __post_init__(self) -> None:
        if not 0 < self.complete_ms <= self.statement_ms <= self.trailing_ms:
            raise ValueError(
                "endpoint bounds must satisfy 0 < complete_ms ≤ statement_ms ≤ trailing_ms"
            )
        if not self.unfinished_logprob <= self.done_logprob <= 0:
            raise ValueError("turn thresholds must satisfy unfinished_logprob ≤ done_logprob ≤ 0")


def trails_off(transcript: str) -> bool:
    """Whether the words stop where a sentence cannot ("…for", "…and,"): no verdict on how
    the turn sounded overrides that."""
    text = transcript.strip()
    words = _WORD.findall(text.lower())
    return bool(words) and (text.endswith((",", "-", "—", "…", "...")) or words[-1] in _TRAILING_WORDS)


def endpoint_silence_ms(
    transcript: str, default_ms: int, options: EndpointOptions, *,
    done_logprob: float | None = None, verdict_pending: bool = False,
    request_complete: bool = False,
) -> int:
    """The silence (ms) after which a turn with this transcript is over.

    `done_logprob` is the turn detector's verdict; `verdict_pending` says one is coming,
    so punctuation alone must not end the turn early. The verdict is asked for as soon as
    the transcript is in (pipeline.answer.reply, early_verdict), ~0.1 s into the silence on
    2 CPU cores: till then the turn ends as an unsure one would (statement_ms, or the VAD
    default if longer), never sooner than the verdict could say. `request_complete`: a
    skill answers the words as a whole request (not with a question back), which ends
    the turn as a finished one unless it ends on a trailing word.
    """
    text = transcript.strip()
    words = _WORD.findall(text.lower())
    if not words:
        return default_ms
    if text.endswith((",", "-", "—", "…", "...")):
        return options.trailing_ms
    if request_complete and words[-1] not in _TRAILING_WORDS:
        # A skill took the words as a whole request ("Cancel the pasta timer.", "What day
        # is it today?") and answers it, not with a question back: that is surer than the
        # detector, which scored such requests -12 … -18 (the statement and trailing waits:
        # 1.0-1.2 s of the bench's slowest skill turns).
        return options.complete_ms
    if words[-1] in _TRAILING_WORDS:
        # Many a finished turn ends in one ("… to all of you.", "Turn it on."): where
        # Whisper closed the sentence, a detector not sure it is unfinished decides
        # between complete and statement; fragments scored -20 … -28.
        closed = text.endswith((".", "?", "!"))
        if not closed or done_logprob is None or done_logprob <= options.unfinished_logprob:
            return options.trailing_ms
    if done_logprob is not None:
        if done_logprob >= options.done_logprob:
            return options.complete_ms
        if done_logprob <= options.unfinished_logprob:
            return options.trailing_ms
        return options.statement_ms
    if verdict_pending:
        return max(default_ms, options.statement_ms)
    if text.endswith(("?", "!")):
        return options.complete_ms
    if text.endswith("."):
        return options.statement_ms
    return default_ms
