"""The KV of the prompt every conversation starts with (system prompt, tools, the
template's start of a user turn), read once per model and copied into each new llama
context — a context of its own per conversation (`--no-shared-llm`, `--draft-model`)
then opens at once instead of reading ~1,000 tokens (16 s for the 0.5B on a slow 2-core
box, ~3x that for the 1.5B; the shared LLM does the same with a sequence copy).

Only sequence 0's KV is copied (`llama_state_seq_*`), not the context's logits: with
`logits_all` those would be ~0.6 GB for 1,000 tokens of Qwen's vocabulary.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from models import llama_internals

if TYPE_CHECKING:
    from llama_cpp import Llama


class PromptState:
    """One model's prompt start, as KV bytes; shared by every context of that model."""

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self._data: bytes | None = None
        self._lock = threading.Lock()

    @property
    def stored(self) -> bool:
        return self._data is not None

    def restore(self, llama: Llama, tokens: list[int]) -> bool:
        """Put the stored KV into `llama`'s fresh context when `tokens` is what it holds;
        False (nothing done) otherwise."""
        with self._lock:
            data, held = self._data, self.tokens
        if data is None or tokens != held:
            return False
        return llama_internals.set_seq_state(llama, data, held)

    def store(self, llama: Llama, tokens: list[int]) -> None:
        """Keep `llama`'s KV, which holds exactly `tokens` (once; later calls keep the first)."""
        if self._data is not None or llama_internals.held(llama).tolist() != tokens:
            return
        data = llama_internals.seq_state(llama)
        with self._lock:
            if self._data is None and data is not None:
                self._data, self.tokens = data, list(tokens)


def warm_with(state: PromptState, llama: Llama, tokens: list[int]) -> None:
    """Make `llama`'s fresh context hold `tokens`: copied from `state`, or read (and then
    kept in `state` for the next context)."""
    if state.restore(llama, tokens):
        return
    llama.reset()  # type: ignore[no-untyped-call]
    llama.eval(tokens)
    state.store(llama, tokens)
