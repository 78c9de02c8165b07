"""Draft sources that need llama-cpp-python (pipeline/answer/drafts.py has the mechanism).

- `PromptLookup`: continue an n-gram already in the prompt (llama-cpp-python's own).
- `ModelDraft`: a smaller model with the same vocabulary guesses the next tokens greedily
  (`--draft-model`; off by default: the embedded LLM is already the smallest one shipped).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from models import llama_internals
from pipeline.answer.drafts import Tokens

if TYPE_CHECKING:
    from llama_cpp import Llama


class PromptLookup:
    name = "prompt_lookup"

    def __init__(self, max_ngram_size: int = 2, num_pred_tokens: int = 8) -> None:
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

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
        llama_internals.extend(llama, context.tolist(), reread_last=True)
        guesses: list[int] = []
        for _ in range(self.num_pred_tokens):
            token = int(np.argmax(llama_internals.last_logits(llama)))
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
