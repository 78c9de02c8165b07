"""Semantic end of turn: has the user finished what they were saying?

Punctuation cannot tell: Whisper writes "What is the capital?" for a speaker who paused
after "capital of…". A language model can: the probability that the user's message ends
here — the chat template's end-of-message token right after the words — is high after
"what is the capital of spain" and tiny after "what is the capital". This is how
LiveKit's turn detector works (a fine-tuned SmolLM2-135M); the embedded SmolLM2-135M-
Instruct separates the two without fine-tuning, with the text lower-cased and stripped of
punctuation (punctuation is Whisper's guess, and a trailing "?" makes any fragment look
finished). The score mixes that probability with the one of a sentence stop (the "?" the
model was not shown), which tells short whole questions ("what is gravity") from fragments
better: docs/turn_detector.md, EndpointOptions for the bands used.

The llama.cpp adapter is models/turn_detector.py: a small context of its own (the
weights are memory-mapped and shared with the responder's) that reads each check's words
only once.
"""

from __future__ import annotations

import re
from typing import Protocol


class TurnDetector(Protocol):
    """Blocking: call it inside the detector's worker."""

    def done_logprob(self, text: str) -> float:
        """How likely the user's turn ends after `text`, as a log probability: near 0
        finished, very negative not."""
        ...

    def prefill(self, text: str) -> None:
        """Read `text`, the words the user has said so far, so that a check of what they
        go on to say reads only the rest."""
        ...


def normalise(text: str) -> str:
    """Lower case, no punctuation (apostrophes kept), single spaces."""
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s']", " ", text.lower())).strip()
