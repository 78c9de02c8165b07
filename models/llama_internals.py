"""Every contact with llama-cpp-python beyond its public `Llama` calls, and with the chat
templates GGUF files carry, in one module: when a llama-cpp-python release moves its
internals, this is the file to fix (tests/integration/test_llm.py, test_turn_detector.py,
test_shared_llm.py and test_prompt_state.py exercise every function here).

- A context's KV as a token record: `held` (what it holds), `extend` (keep the longest
  prefix it holds, read the rest: llama.cpp's KV prefix reuse between turns).
- Logits: `last_logits` (the last read position's), `logits_all` (keep every position's,
  which verifying drafted tokens needs).
- A sequence's KV as bytes (`seq_state`, `set_seq_state`), copied into fresh contexts.
- The shared engine's context, batch and model facts (`open_context`, `open_batch`,
  `end_tokens`, `kv_bytes_per_token`).
- Chat templates: `chat_template` (Jinja in the immutable sandbox: a template is model
  file content, not trusted code) and `token_text`.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from jinja2 import Template
    from llama_cpp import Llama

CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
"""The template used for a model whose file carries none."""


# -- the KV as a token record ------------------------------------------------------------

def held(llama: Llama) -> npt.NDArray[np.intc]:
    """The tokens `llama`'s context holds in its KV, in order."""
    return np.asarray(llama._input_ids, np.intc)  # noqa: SLF001


def extend(llama: Llama, tokens: Sequence[int], *, reread_last: bool = False) -> None:
    """Make the KV hold `tokens`: keep the longest prefix it holds, read the rest.
    `reread_last`: read the last token even when it is held (its logits are wanted)."""
    keep = _prefix_len(llama._input_ids, tokens)  # noqa: SLF001
    if reread_last:
        keep = max(0, min(keep, len(tokens) - 1))
    if keep == len(tokens):
        return
    llama.n_tokens = keep  # eval drops the KV past n_tokens
    llama.eval(list(tokens[keep:]))


def truncate(llama: Llama, keep: int) -> None:
    """Forget what the KV holds past its first `keep` tokens (the next eval overwrites it)."""
    llama.n_tokens = min(keep, llama.n_tokens)


def _prefix_len(a: npt.NDArray[np.intc], b: Sequence[int]) -> int:
    """How many leading tokens `a` and `b` share (vectorised: contexts hold ~1,000)."""
    n = min(len(a), len(b))
    differ = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(differ[0]) if differ.size else n


# -- logits --------------------------------------------------------------------------------

def last_logits(llama: Llama) -> npt.NDArray[np.float32]:
    """The logits of the last position read (a view into llama.cpp's buffer: copy to keep)."""
    from llama_cpp import llama_get_logits_ith

    return np.ctypeslib.as_array(llama_get_logits_ith(llama.ctx, -1), shape=(llama.n_vocab(),))


def logits_all(llama: Llama, on: bool) -> None:
    """Keep the logits of every position read from now on (verifying drafts needs them;
    the buffer is sized by the constructor's `logits_all`: models/load.py)."""
    llama._logits_all = on  # noqa: SLF001


# -- a sequence's KV as bytes --------------------------------------------------------------

def seq_state(llama: Llama) -> bytes | None:
    """Sequence 0's KV (not the logits), or None if llama.cpp would not give it."""
    import llama_cpp

    size = llama_cpp.llama_state_seq_get_size(llama.ctx, 0)
    buffer = (ctypes.c_uint8 * size)()
    if llama_cpp.llama_state_seq_get_data(llama.ctx, buffer, size, 0) != size:
        return None
    return bytes(buffer)


def set_seq_state(llama: Llama, data: bytes, tokens: Sequence[int]) -> bool:
    """Put `data` (from `seq_state` of a context that held `tokens`) into `llama`'s empty
    context; False (nothing done) if it holds anything already or llama.cpp refuses."""
    import llama_cpp

    if llama.n_tokens != 0:
        return False
    buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    if llama_cpp.llama_state_seq_set_data(llama.ctx, buffer, len(data), 0) == 0:
        return False
    llama.input_ids[: len(tokens)] = tokens
    llama.n_tokens = len(tokens)
    return True


# -- the shared engine's context -----------------------------------------------------------

def open_context(llama: Llama, params: Any) -> Any:
    """A second llama.cpp context on `llama`'s weights (closed with `.close()`)."""
    from llama_cpp import _internals

    return _internals.LlamaContext(model=llama._model, params=params, verbose=False)  # noqa: SLF001


def open_batch(tokens: int) -> Any:
    """A llama_batch of `tokens` token slots, one sequence id each (`.batch`, `.close()`)."""
    from llama_cpp import _internals

    return _internals.LlamaBatch(n_tokens=tokens, embd=0, n_seq_max=1, verbose=False)


def end_tokens(llama: Llama) -> set[int]:
    """Every token that ends generation (end of turn, end of text, ...)."""
    import llama_cpp

    if llama.n_vocab() > 200_000:  # too many to ask one by one
        return {llama.token_eos()}
    vocab = llama._model.vocab  # noqa: SLF001
    return {t for t in range(llama.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, t)}


def kv_bytes_per_token(llama: Llama) -> int:
    """K and V in f16 for every layer: 2 x layers x (embedding / heads x KV heads) x 2."""
    import llama_cpp

    model = llama._model.model  # noqa: SLF001
    layers = llama_cpp.llama_model_n_layer(model)
    heads, kv_heads = llama_cpp.llama_model_n_head(model), llama_cpp.llama_model_n_head_kv(model)
    width = llama_cpp.llama_model_n_embd(model) // max(1, heads) * kv_heads
    return int(2 * layers * width * 2)


# -- chat templates --------------------------------------------------------------------------

def template_source(llama: Llama) -> str:
    """The chat template the model file carries ("" if none)."""
    return str(llama.metadata.get("tokenizer.chat_template") or "")


def chat_template(source: str) -> Template:
    """`source` compiled in Jinja's immutable sandbox, as Hugging Face renders templates."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    return ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(source)


def token_text(llama: Llama, token: int) -> str:
    """A special token's text ("" for none: a model without a BOS has token -1)."""
    if token < 0:
        return ""
    return llama.detokenize([token], special=True).decode("utf-8", errors="ignore")
