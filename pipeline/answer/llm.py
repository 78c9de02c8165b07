"""LLM: what a conversation needs of a language model (`Responder`), its messages and
options. The llama.cpp adapters live in models/ (models/llama_responder.py: a context of
its own; models/shared_responder.py: a sequence of the shared engine).

The prompt of every turn is the previous turn's prompt plus the new exchange, so
llama.cpp's longest-common-prefix check finds the conversation's KV prefix (system prompt
+ history) already evaluated and only the new user turn is read: TTFT ~600 ms cold, ~50 ms
warm (measured on a 2-core CPU). Between turns `prefill` also reads the finished exchange and the
template's start of the next user message, so a reply reads only the user's words and the
assistant header. The history is trimmed, oldest exchanges first, before it would
overflow the context.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

log = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = (
    # Measured on SmolLM2-135M: naming the assistant or listing don'ts made it answer in
    # French; this wording keeps it short and in English.
    "You are a friendly voice assistant. Keep every answer to one or two short sentences "
    "in plain English."
)


@dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str
    interrupted: bool = False
    """An assistant reply the user cut off: `content` is what they heard of it."""


class Responder(Protocol):
    """One conversation's LLM. Blocking: iterate `reply` inside the context's worker."""

    model_id: str

    @property
    def system_prompt(self) -> str: ...

    def reply(
        self, history: Sequence[Message], user: str, draft: str | None = None,
        plain: bool = False,
    ) -> Iterator[str]:
        """Text pieces of the assistant's answer to `user` after `history`. `draft` is a
        reply we expect (it may be wrong): a hint that can make decoding faster, never a
        change to what is generated. `plain`: no tool call, words only (a model that takes
        tools called one the user's words did not support)."""
        ...

    def warm(self, history: Sequence[Message]) -> None:
        """Evaluate the prompt prefix now so the first turn is not cold."""
        ...

    def prefill(self, history: Sequence[Message], user_start: str = "") -> None:
        """Evaluate what the next turn's prompt after `history` starts with, so the reply
        has less to read: between turns the template's start of a user message, while the
        user speaks also `user_start`, the words the live caption has settled on. Only ever
        a head start, never a change to a reply."""
        ...


# Capabilities some Responders have (isinstance, not getattr: each is declared here).


@runtime_checkable
class Promotes(Protocol):
    """A Responder whose jobs wait in a queue shared with other conversations
    (models/shared_responder.py): a committed turn's job moves up to confirmed priority."""

    def promote(self) -> None: ...


@runtime_checkable
class TakesTools(Protocol):
    """A Responder whose chat template takes tools (pipeline.answer.tools): `tools` says
    whether they are offered (LlmOptions.tools and the template)."""

    tools: bool


@runtime_checkable
class Sequenced(Protocol):
    """A Responder that is one sequence of a shared LLM: `key` names its KV there."""

    key: int


@dataclass(frozen=True, kw_only=True)
class LlmOptions:
    """How replies are generated (llama.cpp). What the latency levers among these buy:
    docs/latency.md."""

    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    max_tokens: int = 80
    """Replies are spoken; a cap keeps a rambling small model short."""
    temperature: float = 0.0
    """0 = greedy: the same transcript gives the same reply (speculation stays exact)."""
    repeat_penalty: float = 1.1
    n_ctx: int = 2048
    threads: int = 2
    gpu_layers: int = 0
    """Layers offloaded to a GPU (needs a CUDA build of llama-cpp-python); -1 = all."""
    drafts: bool = True
    """Verify expected replies (reply cache, re-speculation) as drafts (pipeline.answer.drafts)."""
    reuse_kv: bool = True
    """Keep the conversation's KV prefix between turns (default True; False re-reads the
    whole prompt every turn: the `--no-kv-reuse` lever)."""
    prompt_lookup: bool = False
    """Add prompt-lookup drafts (default False: slower for chat on a CPU)."""
    draft_model: str | None = None
    """A smaller GGUF with the same vocabulary that drafts every reply (ModelDraft)."""
    tools: bool = True
    """Offer the built-in skills as tools when the model's chat template takes tools
    (pipeline.answer.tools): paraphrases reach the skills. Off: the LLM only talks."""


class PromptStart(Protocol):
    """A prompt start's KV kept for new contexts (models/prompt_state.PromptState)."""

    def restore(self, llama: Any, tokens: list[int]) -> bool: ...

    def store(self, llama: Any, tokens: list[int]) -> None: ...


def common_prefix(a: Iterable[object], b: Iterable[object]) -> int:
    """How many leading items `a` and `b` share (tokens, or characters of two prompts)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
