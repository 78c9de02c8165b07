"""Draft-and-verify decoding: one mechanism, pluggable draft sources.

A source proposes the next few tokens of the reply; llama.cpp evaluates them in one batch
and keeps the longest prefix the target model would have chosen itself (llama-cpp-python's
`draft_model` hook), so every emitted token is still the target model's choice. Sources:

- `TextDraft`: a whole reply we expect — from the verified reply cache, or the reply
  speculated for a transcript that then changed. A cached reply is only ever a draft, so
  nothing stale is served: the model checks every token.
- `PromptLookup` and `ModelDraft` (models/drafts.py, they use llama-cpp-python): continue
  an n-gram already in the prompt; a smaller model with the same vocabulary guesses the
  next tokens greedily (`--draft-model`).

No model library is imported here (pipeline/ is orchestration and pure cores).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from pipeline.compute.stats import DraftStats

Tokens = npt.NDArray[np.intc]
_EMPTY: Tokens = np.zeros(0, np.intc)


class DraftSource(Protocol):
    name: str

    def propose(self, generated: Tokens, context: Tokens) -> Tokens:
        """Up to a few tokens that may follow `generated` (the reply so far)."""
        ...


class TextDraft:
    """Proposes the continuation of an expected reply while the output still follows it."""

    def __init__(self, name: str, tokens: Sequence[int], max_tokens: int = 16) -> None:
        self.name = name
        self.tokens = np.asarray(tokens, np.intc)
        self.max_tokens = max_tokens

    def propose(self, generated: Tokens, context: Tokens) -> Tokens:
        n = len(generated)
        if n >= len(self.tokens) or not np.array_equal(self.tokens[:n], generated):
            return _EMPTY
        return self.tokens[n : n + self.max_tokens]


class Drafter:
    """The `draft_model` llama-cpp-python calls after each verified step (it only calls it:
    no base class needed); asks each source in turn."""

    def __init__(self, stats: DraftStats | None = None) -> None:
        self.stats = stats or DraftStats()
        self.sources: list[DraftSource] = []
        self.always: list[Callable[[], DraftSource]] = []
        self._prompt_len = 0
        self._pending: tuple[int, Tokens] | None = None
        self._on_first_proposal: Callable[[], None] | None = None

    def start(
        self,
        prompt_len: int,
        sources: Sequence[DraftSource],
        on_first_proposal: Callable[[], None] | None = None,
    ) -> None:
        """A new reply begins after `prompt_len` prompt tokens. `on_first_proposal` runs
        before the reply's first drafted tokens are evaluated (to switch on the logits
        that verifying them needs)."""
        self._prompt_len = prompt_len
        self.sources = [*sources, *(make() for make in self.always)]
        self._pending = None
        self._on_first_proposal = on_first_proposal

    def __call__(self, input_ids: Tokens, /, **_kwargs: Any) -> Tokens:
        self._account(input_ids)
        generated = input_ids[self._prompt_len :]
        for source in self.sources:
            proposal = source.propose(generated, input_ids)
            if len(proposal):
                if self._on_first_proposal is not None:
                    self._on_first_proposal()
                    self._on_first_proposal = None
                self._pending = (len(input_ids), proposal)
                self.stats.proposed += len(proposal)
                return proposal
        return _EMPTY

    def finish(self, output: Tokens) -> None:
        """The reply ended: account the last proposal against the final output."""
        self._account(output)
        self.sources = []
        self._on_first_proposal = None

    def _account(self, input_ids: Tokens) -> None:
        if self._pending is None:
            return
        start, proposal = self._pending
        self._pending = None
        verified = input_ids[start : start + len(proposal)]
        matches = np.cumprod(verified == proposal[: len(verified)])
        self.stats.accepted += int(matches.sum())
