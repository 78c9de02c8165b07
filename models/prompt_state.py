"""The KV of the prompt every conversation starts with (system prompt, tools, the
template's start of a user turn), read once per model and copied into each new llama
context — a context of its own per conversation (`--no-shared-llm`, `--draft-model`)
then opens at once instead of reading ~1,000 tokens (16 s for the 0.5B on a slow 2-core
box, ~3x that for the 1.5B; the shared LLM does the same with a sequence copy).

Only sequence 0's KV is copied (`llama_state_seq_*`), not the context's logits: with
`logits_all` those would be ~0.6 GB for 1,000 tokens of Qwen's vocabulary.
"""

from __future__ import annotations

import ctypes
import threading
from typing import TYPE_CHECKING

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
        import llama_cpp

        with self._lock:
            data, held = self._data, self.tokens
        if data is None or tokens != held or llama.n_tokens != 0:
            return False
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if llama_cpp.llama_state_seq_set_data(llama.ctx, buffer, len(data), 0) == 0:
            return False
        llama.input_ids[: len(held)] = held
        llama.n_tokens = len(held)
        return True

    def store(self, llama: Llama, tokens: list[int]) -> None:
        """Keep `llama`'s KV, which holds exactly `tokens` (once; later calls keep the first)."""
        import llama_cpp

        if self._data is not None or list(llama._input_ids) != tokens:
            return
        size = llama_cpp.llama_state_seq_get_size(llama.ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        if llama_cpp.llama_state_seq_get_data(llama.ctx, buffer, size, 0) != size:
            return
        with self._lock:
            if self._data is None:
                self._data, self.tokens = bytes(buffer), list(tokens)


def warm_with(state: PromptState, llama: Llama, tokens: list[int]) -> None:
    """Make `llama`'s fresh context hold `tokens`: copied from `state`, or read (and then
    kept in `state` for the next context)."""
    if state.restore(llama, tokens):
        return
    llama.reset()  # type: ignore[no-untyped-call]
    llama.eval(tokens)
    state.store(llama, tokens)
