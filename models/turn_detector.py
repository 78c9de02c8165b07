"""The turn detector on llama.cpp (pipeline/listen/turn_detector.py says what it decides and
why a language model can): how likely the user's message ends right after their words, from
a small model's context of its own. The prompt's start, up to the user's message (with a
few finished exchanges: `TurnPrompt`), is read once; each check reads only the words the
previous check or a `prefill` has not (~5 ms a token on 2 CPU threads).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from models import llama_internals
from pipeline.listen.turn_detector import normalise

if TYPE_CHECKING:
    from llama_cpp import Llama

MAX_WORDS_TOKENS = 96
"""Only the last words matter for whether a turn is over; a long turn is cut to these."""
_SENTINEL = "\x00USER\x00"
_STOPS = (".", "?", "!")

EXAMPLES = (
    ("who discovered penicillin", "Alexander Fleming, in 1928."),
    ("set an alarm for seven", "Your alarm is set for 7:00."),
    ("how tall is the eiffel tower", "About 330 metres."),
)
"""Finished exchanges, written as the detector sees a user's words (lower case, no
punctuation), none of them a bench question. Measured and not used: read before the user's
words they let fewer finished questions end fast (docs/turn_detector.md)."""


@dataclass(frozen=True, kw_only=True)
class TurnPrompt:
    """What the detector reads before the user's words and what it scores after them
    (docs/turn_detector.md measured the choices; `PLAIN` is the formulation before)."""

    examples: tuple[tuple[str, str], ...] = ()
    """(user, assistant) exchanges before the user's message (such as `EXAMPLES`), read
    once with the prompt's start, so free per check."""
    stop_weight: float = 0.5
    """The score is (1 - w)·log P(the message ends) + w·log P(it ends or a sentence stop
    comes next): the user's words are read without punctuation, and after a whole
    question the model puts much of its probability on the "?" it did not see ("what is
    gravity": log P(end) −12.6, of a stop −0.6). A fragment that could be a sentence ("what
    is twelve") gets a stop too, so the two are mixed (w = 1 let fewer finished turns end
    fast than w = 0; w = 0.5 more than either: docs/turn_detector.md)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.stop_weight <= 1.0:
            raise ValueError("stop_weight must be in [0, 1]")


PLAIN = TurnPrompt(stop_weight=0.0)
"""The formulation before docs/turn_detector.md: log P(<|im_end|>) alone (its thresholds
were −11 / −15: `PLAIN_THRESHOLDS`)."""
PLAIN_THRESHOLDS = (-11.0, -15.0)
"""EndpointOptions' (done_logprob, unfinished_logprob) for `PLAIN`."""


class LlamaTurnDetector:
    """End-of-turn log probability from a ChatML model (the embedded SmolLM2)."""

    def __init__(self, llama: Llama, prompt: TurnPrompt = TurnPrompt()) -> None:
        self.llama = llama
        template = llama_internals.template_source(llama)
        if "<|im_end|>" not in template:
            raise ValueError("the turn detector needs a ChatML chat model (like SmolLM2), "
                             "whose messages end with <|im_end|>")
        end = llama.tokenize(b"<|im_end|>", add_bos=False, special=True)
        if len(end) != 1:
            raise ValueError("the turn detector model has no single <|im_end|> token")
        self._end, self._stops, self._weight = end[0], _stop_tokens(llama), prompt.stop_weight
        self._prefix = llama.tokenize(_prompt_prefix(template, prompt.examples).encode(),
                                      add_bos=False, special=True)
        if len(self._prefix) + MAX_WORDS_TOKENS > llama.n_ctx():
            raise ValueError(f"the turn detector's prompt ({len(self._prefix)} tokens) and "
                             f"{MAX_WORDS_TOKENS} of words do not fit its context")
        llama.reset()  # type: ignore[no-untyped-call]
        llama.eval(self._prefix)

    def done_logprob(self, text: str) -> float:
        tokens = self._words(text)
        if not tokens:
            return 0.0
        self._read(tokens, keep_last=False)
        logits = llama_internals.last_logits(self.llama)
        end = float(logits[self._end])
        stop = float(np.logaddexp.reduce(np.append(logits[self._stops], end).astype(np.float64)))
        return (1 - self._weight) * end + self._weight * stop - _log_sum_exp(logits)

    def prefill(self, text: str) -> None:
        if tokens := self._words(text):
            self._read(tokens, keep_last=True)

    def _words(self, text: str) -> list[int]:
        words = normalise(text)
        return self.llama.tokenize(words.encode(), add_bos=False)[-MAX_WORDS_TOKENS:] if words else []

    def _read(self, tokens: list[int], *, keep_last: bool) -> None:
        """Make the KV hold the prompt prefix + `tokens`, reading only what it lacks (for
        a verdict the last token is read again: its logits are the answer)."""
        llama_internals.extend(self.llama, self._prefix + tokens, reread_last=not keep_last)

    def close(self) -> None:
        self.llama.close()


def _log_sum_exp(logits: npt.NDArray[np.float32]) -> float:
    """log Σ exp(logits) over the vocabulary: 0.05 ms, where np.logaddexp.reduce took 1.3."""
    top = float(logits.max())
    return top + float(np.log(np.exp(logits - top).sum(dtype=np.float64)))


def _stop_tokens(llama: Llama) -> list[int]:
    """The single tokens of a sentence stop, bare and after a space."""
    found = (llama.tokenize(f"{space}{stop}".encode(), add_bos=False)
             for stop in _STOPS for space in ("", " "))
    return sorted({t[0] for t in found if len(t) == 1})


def _prompt_prefix(template: str, examples: tuple[tuple[str, str], ...]) -> str:
    """The chat template rendered up to where the user's message starts, after
    `examples`, with the template's own default system prompt (it scored better than
    ours: 39/40 vs 38/40)."""
    turns = [{"role": role, "content": text} for user, reply in examples
             for role, text in (("user", user), ("assistant", reply))]
    rendered = llama_internals.chat_template(template).render(
        messages=[*turns, {"role": "user", "content": _SENTINEL}], add_generation_prompt=False,
        bos_token="", eos_token="")
    return rendered.split(_SENTINEL, 1)[0]
