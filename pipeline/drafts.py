"""Draft-and-verify decoding: one mechanism, pluggable draft sources.

A source proposes the next few tokens of the reply; llama.cpp evaluates them in one batch
and keeps the longest prefix the target model would have chosen itself (llama-cpp-python's
`draft_model` hook), so every emitted token is still the target model's choice. Sources:

- `TextDraft`: a whole reply we expect — from the verified reply cache, or the reply
  speculated for a transcript that then changed. A cached reply is only ever a draft, so
  nothing stale is served: the model checks every token.
- `PromptLookup`: continue an n-gram already in the prompt (llama-cpp-python's own).
- `ModelDraft`: a smaller model with the same vocabulary guesses the next tokens greedily
  (`--draft-model`; off by default: the embedded LLM is already the smallest one shipped).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt
from llama_cpp.llama_speculative import LlamaDraftModel, LlamaPromptLookupDecoding

from pipeline.stats import DraftStats

if TYPE_CHECKING:
    from llama_cpp import Llama

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


class PromptLookup:
    name = "prompt_lookup"

    def __init__(self, max_ngram_size: int = 2, num_pred_tokens: int = 8) -> None:
        self._lookup = LlamaPromptLookupDecoding(max_ngram_size, num_pred_tokens)

    def propose(self, generated: Tokens, context: Tokens) -> Tokens:
        return np.asarray(self._lookup(context), np.intc)


class ModelDraft:
    """Greedy guesses from a draft model's own llama context, which keeps the longest
    common prefix with the target's tokens in its KV, as the target's context does."""

    name = "draft_model"

    def __init__(self, llama: Llama, num_pred_tokens: int = 6) -> None:
        self.llama = llama
        self.num_pred_tokens = num_pred_tokens
        self._eos = llama.token_eos()

    def propose(self, generated: Tokens, context: Tokens) -> Tokens:
        llama = self.llama
        held = llama._input_ids
        same = np.flatnonzero(held[: len(context)] != context[: len(held)])
        keep = min(int(same[0]) if same.size else min(len(held), len(context)), len(context) - 1)
        llama.n_tokens = keep  # eval drops the KV past n_tokens
        llama.eval(context[keep:].tolist())
        guesses: list[int] = []
        for _ in range(self.num_pred_tokens):
            token = int(np.argmax(_last_logits(llama)))
            if token == self._eos:
                break
            guesses.append(token)
            llama.eval([token])
        return np.asarray(guesses, np.intc)


def same_vocabulary(target: Llama, draft: Llama) -> bool:
    """Drafts are token ids: the two models must mean the same thing by each."""
    probe = "Hello, what's 12 x 7? <|im_end|> Ünïcödé".encode()
    return bool(target.n_vocab() == draft.n_vocab() and target.token_eos() == draft.token_eos()
                and target.tokenize(probe, special=True) == draft.tokenize(probe, special=True))


def _last_logits(llama: Llama) -> npt.NDArray[np.float32]:
    from llama_cpp import llama_get_logits_ith

    return np.ctypeslib.as_array(llama_get_logits_ith(llama.ctx, -1), shape=(llama.n_vocab(),))


class Drafter(LlamaDraftModel):
    """The `draft_model` llama.cpp calls after each verified step; asks each source in turn."""

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
