"""A llama-cpp-python context of its own per conversation (`--no-shared-llm`, and the
default with `--draft-model`): the `Responder` of pipeline/answer/llm.py on one `Llama`, its
conversation's KV prefix kept warm between turns. The shared engine's responder
(models/shared_responder.py) inherits its prompt building.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from models import llama_internals
from pipeline.answer.drafts import Drafter, TextDraft
from pipeline.answer.llm import LlmOptions, Message, PromptStart, common_prefix
from pipeline.answer.tools import TOOLS, in_calls_only

if TYPE_CHECKING:
    from llama_cpp import Llama, LogitsProcessorList


class LlamaResponder:
    """A llama context with the conversation's KV prefix kept warm between turns."""

    def __init__(self, llama: Llama, model_id: str, options: LlmOptions | None = None) -> None:
        self.llama = llama
        self.model_id = model_id
        self.options = options or LlmOptions()
        template = llama_internals.template_source(llama) or llama_internals.CHATML
        eos = llama_internals.token_text(llama, llama.token_eos())
        bos = llama_internals.token_text(llama, llama.token_bos())
        self._template = llama_internals.chat_template(template)
        self._special = {"eos_token": eos, "bos_token": bos}
        self._stop = [eos] if eos else []
        self.tools = self.options.tools and "tools" in template
        """The template lays out tools: the skills are offered to the model as tools."""
        self._call_bias: dict[int, float] | None = None
        self._calls_kept_out: LogitsProcessorList | None = None
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
            llama_internals.logits_all(self.llama, False)
            drafter.start(len(tokens), sources, on_first_proposal=self._all_logits)
        stream = self.llama.create_completion(
            tokens,  # token ids, not text: the prompt is tokenized once per turn
            max_tokens=self.options.max_tokens,
            temperature=self.options.temperature,
            repeat_penalty=self.options.repeat_penalty,
            stop=self._stop,
            stream=True,
            logits_processor=self._keep_calls_out() if plain and self.tools else None,
        )
        try:
            for chunk in stream:
                text = chunk["choices"][0]["text"]  # type: ignore[index]
                self.tokens_generated += 1
                if text:
                    yield text
        finally:
            if drafter is not None:
                drafter.finish(llama_internals.held(self.llama))

    def _no_calls(self) -> dict[int, float]:
        """Biases that keep a reply in words (the same prompt, so its KV is kept): every
        token tool calls and talk about tools are made of (`in_calls_only`), and the
        `<tool_call>` tag; never the end of the reply. Built once (a scan of the vocabulary)."""
        if self._call_bias is None:
            llama = self.llama
            ids = [i for i in range(llama.n_vocab()) if in_calls_only(llama.detokenize([i]))]
            ids += llama.tokenize(b"<tool_call>", add_bos=False, special=True)[:1]
            ends = {llama.token_eos(), *(t for stop in self._stop for t in llama.tokenize(
                stop.encode(), add_bos=False, special=True))}
            self._call_bias = {i: -100.0 for i in ids if i not in ends}
        return self._call_bias

    def _keep_calls_out(self) -> LogitsProcessorList:
        """`_no_calls` as one vectorized add on every token (llama-cpp-python's own
        `logit_bias` loops in Python over its ~6,600 entries: ~1.3 ms a token)."""
        if self._calls_kept_out is None:
            from llama_cpp import LogitsProcessorList

            bias = self._no_calls()
            ids = np.fromiter(bias.keys(), np.intp, len(bias))
            values = np.fromiter(bias.values(), np.float32, len(bias))

            def biased(_input_ids: Any, scores: npt.NDArray[np.single]) -> npt.NDArray[np.single]:
                scores[ids] += values
                return scores

            self._calls_kept_out = LogitsProcessorList([biased])
        return self._calls_kept_out

    @property
    def drafter(self) -> Drafter | None:
        model = getattr(self.llama, "draft_model", None)
        return model if isinstance(model, Drafter) else None

    def _all_logits(self) -> None:
        llama_internals.logits_all(self.llama, True)

    def _draft_tokens(self, draft: str) -> list[int]:
        tokens = self.llama.tokenize(draft.strip().encode(), add_bos=False, special=True)
        return [*tokens, self.llama.token_eos()] if self._stop else tokens

    def warm(self, history: Sequence[Message]) -> None:
        if self.tools:
            self._keep_calls_out()  # a scan of the vocabulary (~0.3 s): not on a turn's clock
        self.llama.reset()  # type: ignore[no-untyped-call]
        tokens = self.next_prompt_start(history)
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
            self._extend(self.next_prompt_start(history))

    def _user_start(self, history: Sequence[Message], words: str) -> list[int]:
        """The prompt's tokens up to the end of `words`, the start of the user's message.
        The tokenizer splits before spaces, so the tokens of a message that goes on after
        these words start with exactly these (the common prefix decides what is kept)."""
        prompt = self.prompt(self.fit(history, words), words)
        at = prompt.rfind(words)
        if at < 0:  # a template that rewrites the user's words: nothing safe to read ahead
            return self.next_prompt_start(history)
        return self._tokens(prompt[: at + len(words)])

    def next_prompt_start(self, history: Sequence[Message]) -> list[int]:
        """The tokens the next turn's prompt starts with, whatever the user says: system
        prompt, the history `fit` will keep, and the template's start of a user message."""
        kept = self.fit(history, _PROBES[0])
        prompts = [self.prompt(kept, probe) for probe in _PROBES]
        tokens = self._tokens(prompts[0][: common_prefix(*prompts)])
        for prompt in prompts:
            # The last tokens before the user's words could merge with them (a BPE seam):
            # keep only what the full prompts are tokenized to as well.
            tokens = tokens[: common_prefix(tokens, self._tokens(prompt))]
        return tokens

    def _extend(self, tokens: list[int]) -> None:
        """Make the KV hold `tokens`: keep the longest prefix it holds, evaluate the rest."""
        if self.drafter is not None:  # a prompt's logits are not wanted (see `reply`)
            llama_internals.logits_all(self.llama, False)
        llama_internals.extend(self.llama, tokens)

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
