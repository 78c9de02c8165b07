"""LLM: llama-cpp-python, one persistent context per conversation.

The prompt of every turn is the previous turn's prompt plus the new exchange, so
llama.cpp's longest-common-prefix check finds the conversation's KV prefix (system prompt
+ history) already evaluated and only the new user turn is read: TTFT ~600 ms cold, ~50 ms
warm (DESIGN.md). Between turns `prefill` also reads the finished exchange and the
template's start of the next user message, so a reply reads only the user's words and the
assistant header. The history is trimmed, oldest exchanges first, before it would
overflow the context.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pipeline.drafts import Drafter, TextDraft
from pipeline.tools import TOOLS

if TYPE_CHECKING:
    from llama_cpp import Llama

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


@dataclass(frozen=True, kw_only=True)
class LlmOptions:
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
    """Verify expected replies (reply cache, re-speculation) as drafts (pipeline.drafts)."""
    reuse_kv: bool = True
    """Keep the conversation's KV prefix between turns (off only to measure its worth)."""
    prompt_lookup: bool = False
    """Prompt-lookup drafts: measured slower for chat on CPU (DESIGN.md), so off."""
    draft_model: str | None = None
    """A smaller GGUF with the same vocabulary that drafts every reply (ModelDraft)."""
    tools: bool = True
    """Offer the built-in skills as tools when the model's chat template takes tools
    (pipeline.tools): paraphrases reach the skills. Off: the LLM only talks."""


class PromptStart(Protocol):
    """A prompt start's KV kept for new contexts (models/prompt_state.PromptState)."""

    def restore(self, llama: Any, tokens: list[int]) -> bool: ...

    def store(self, llama: Any, tokens: list[int]) -> None: ...


class LlamaResponder:
    """A llama context with the conversation's KV prefix kept warm between turns."""

    def __init__(self, llama: Llama, model_id: str, options: LlmOptions | None = None) -> None:
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        self.llama = llama
        self.model_id = model_id
        self.options = options or LlmOptions()
        template = llama.metadata.get("tokenizer.chat_template") or _CHATML
        eos = _token_text(llama, llama.token_eos())
        bos = _token_text(llama, llama.token_bos())
        self._template = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True
        ).from_string(template)
        self._special = {"eos_token": eos, "bos_token": bos}
        self._stop = [eos] if eos else []
        self.tools = self.options.tools and "tools" in template
        """The template lays out tools: the skills are offered to the model as tools."""
        self._call_bias: dict[int, float] | None = None
        self.tokens_generated = 0
        self.also_close: list[Callable[[], None]] = []
        """Closed with this responder (a draft model's context)."""
        self.prompt_state: PromptStart | None = None
        """The prompt start's KV, copied into this fresh context instead of read, once
        one context has read it (models/prompt_state.py)."""
        self.also_warm: list[Callable[[list[int]], None]] = []
        """Given the prompt start when this context is warmed (a draft model's context)."""

    @property
    def system_prompt(self) -> str:
        return self.options.system_prompt

    def prompt(self, history: Sequence[Message], user: str | None) -> str:
        messages = [{"role": "system", "content": self.options.system_prompt}]
        messages += [{"role": m.role, "content": m.content} for m in history]
        if user is not None:
            messages.append({"role": "user", "content": user})
        return str(
            self._template.render(
                messages=messages, add_generation_prompt=user is not None,
                tools=TOOLS if self.tools else None, **self._special,
            )
        )

    def fit(self, history: Sequence[Message], user: str) -> list[Message]:
        """The newest part of `history` that leaves room for `user` and the reply."""
        kept = list(history)
        budget = self.options.n_ctx - self.options.max_tokens - 8
        while kept and self._longer(self.prompt(kept, user), budget):
            kept = kept[2:] if len(kept) >= 2 else []
        return kept

    def reply(
        self, history: Sequence[Message], user: str, draft: str | None = None,
        plain: bool = False,
    ) -> Iterator[str]:
        tokens = self._tokens(self.prompt(self.fit(history, user), user))
        if not self.options.reuse_kv:
            self.llama.reset()  # type: ignore[no-untyped-call]
        drafter = self.drafter
        if drafter is not None:
            sources = []
            if draft and self.options.drafts:
                sources.append(TextDraft("expected_reply", self._draft_tokens(draft)))
            # Verifying a draft needs the logits of every drafted position (their buffer is
            # sized by the constructor's logits_all: models/load.py); computing them for the
            # prompt too cost 12-17 ms TTFT, so they come on at the drafter's first proposal.
            self.llama._logits_all = False
            drafter.start(len(tokens), sources, on_first_proposal=self._all_logits)
        stream = self.llama.create_completion(
            tokens,  # token ids, not text: the prompt is tokenized once per turn
            max_tokens=self.options.max_tokens,
            temperature=self.options.temperature,
            repeat_penalty=self.options.repeat_penalty,
            stop=self._stop,
            stream=True,
            logit_bias=self._no_calls() if plain and self.tools else None,
        )
        try:
            for chunk in stream:
                text = chunk["choices"][0]["text"]  # type: ignore[index]
                self.tokens_generated += 1
                if text:
                    yield text
        finally:
            if drafter is not None:
                drafter.finish(np.asarray(self.llama._input_ids, np.intc))

    def _no_calls(self) -> dict[int, float]:
        """Biases that keep a tool call from starting (the same prompt, so its KV is kept):
        the `<tool_call>` token and every token that opens a JSON object. Built once."""
        if self._call_bias is None:
            llama = self.llama
            ids = [i for i in range(llama.n_vocab())
                   if llama.detokenize([i]).lstrip().startswith(b"{")]
            tag = llama.tokenize(b"<tool_call>", add_bos=False, special=True)
            self._call_bias = {i: -100.0 for i in [*ids, *tag[:1]]} if len(tag) == 1 else \
                {i: -100.0 for i in ids}
        return self._call_bias

    @property
    def drafter(self) -> Drafter | None:
        model = getattr(self.llama, "draft_model", None)
        return model if isinstance(model, Drafter) else None

    def _all_logits(self) -> None:
        self.llama._logits_all = True

    def _draft_tokens(self, draft: str) -> list[int]:
        tokens = self.llama.tokenize(draft.strip().encode(), add_bos=False, special=True)
        return [*tokens, self.llama.token_eos()] if self._stop else tokens

    def warm(self, history: Sequence[Message]) -> None:
        self.llama.reset()  # type: ignore[no-untyped-call]
        tokens = self._next_prompt_start(history)
        for warm in self.also_warm:
            warm(tokens)
        state = self.prompt_state
        if state is not None and state.restore(self.llama, tokens):
            return
        self._extend(tokens)
        if state is not None:
            state.store(self.llama, tokens)

    def prefill(self, history: Sequence[Message], user_start: str = "") -> None:
        if not self.options.reuse_kv:
            return
        if user_start:
            self._extend(self._user_start(history, user_start))
        else:
            self._extend(self._next_prompt_start(history))

    def _user_start(self, history: Sequence[Message], words: str) -> list[int]:
        """The prompt's tokens up to the end of `words`, the start of the user's message.
        The tokenizer splits before spaces, so the tokens of a message that goes on after
        these words start with exactly these (the common prefix decides what is kept)."""
        prompt = self.prompt(self.fit(history, words), words)
        at = prompt.rfind(words)
        if at < 0:  # a template that rewrites the user's words: nothing safe to read ahead
            return self._next_prompt_start(history)
        return self._tokens(prompt[: at + len(words)])

    def _next_prompt_start(self, history: Sequence[Message]) -> list[int]:
        """The tokens the next turn's prompt starts with, whatever the user says: system
        prompt, the history `fit` will keep, and the template's start of a user message."""
        kept = self.fit(history, _PROBES[0])
        prompts = [self.prompt(kept, probe) for probe in _PROBES]
        tokens = self._tokens(prompts[0][: _common_prefix(*prompts)])
        for prompt in prompts:
            # The last tokens before the user's words could merge with them (a BPE seam):
            # keep only what the full prompts are tokenized to as well.
            tokens = tokens[: _common_prefix(tokens, self._tokens(prompt))]
        return tokens

    def _extend(self, tokens: list[int]) -> None:
        """Make the KV hold `tokens`: keep the longest prefix it holds, evaluate the rest."""
        llama = self.llama
        keep = _common_prefix(llama._input_ids, tokens)
        if keep == len(tokens):
            return
        llama.n_tokens = keep  # eval drops the KV past n_tokens
        if self.drafter is not None:
            llama._logits_all = False
        llama.eval(tokens[keep:])

    def close(self) -> None:
        self.llama.close()
        for close in self.also_close:
            close()

    def _tokens(self, prompt: str) -> list[int]:
        """`prompt` as create_completion would tokenize it (a BOS if the model wants one)."""
        return self.llama.tokenize(prompt.encode(), add_bos=True, special=True)

    def _longer(self, prompt: str, budget: int) -> bool:
        # Every token but a BOS spans at least one byte (the budget's margin covers a BOS),
        # so a prompt within budget in bytes is within it in tokens: most turns skip
        # tokenizing the whole prompt here.
        return len(prompt.encode()) > budget and len(self._tokens(prompt)) > budget


_PROBES = ("What is it?", "hello")
"""Two user messages that start differently: their prompts part where the user's words
begin, and tokens both prompts share up to there do not depend on those words."""


def _common_prefix(a: Iterable[object], b: Iterable[object]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _token_text(llama: Llama, token: int) -> str:
    if token < 0:
        return ""
    return llama.detokenize([token], special=True).decode("utf-8", errors="ignore")


_CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
