"""One conversation's view of the LLM every conversation shares (models/shared_llm.py).

`SeqResponder` is the `Responder` a conversation uses: the same prompts, tool bias and
drafts as a llama context of its own (models/llama_responder.py, whose prompt building
it inherits), submitted as jobs to the shared engine and read back token by token.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator, Sequence

from models.llama_responder import LlamaResponder
from models.shared_llm import END, SharedLlama
from pipeline.answer.drafts import TextDraft
from pipeline.answer.llm import LlmOptions, Message
from pipeline.compute.batching import Job
from pipeline.compute.workers import current_gate, current_priority


class SeqResponder(LlamaResponder):
    """One conversation's view of the shared LLM: the same prompts as a context of its
    own, read and decoded by the shared engine."""

    _keys = iter(range(1, 1 << 62))

    def __init__(self, shared: SharedLlama, model_id: str, options: LlmOptions) -> None:
        super().__init__(shared.llama, model_id, options)
        self.shared = shared
        self.key = next(SeqResponder._keys)
        self._live: Job | None = None
        """The reply job in flight (one at a time per conversation)."""
        self.traces: list[tuple[list[int], list[float]]] | None = None
        """When a list: each reply's tokens and their leads over the runner-up."""

    def reply(self, history: Sequence[Message], user: str, draft: str | None = None,
              plain: bool = False) -> Iterator[str]:
        tokens = self._tokens(self.prompt(self.fit(history, user), user))
        if not self.options.reuse_kv:
            self.shared.forget(self.key)
        drafts = [TextDraft("expected_reply", self._draft_tokens(draft))] \
            if draft and self.options.drafts else []
        gate = current_gate()
        if gate is not None:
            gate.on_change(self.shared.wake)  # its reader took a token, or its speech began
        job = self.shared.submit(Job(
            key=self.key, prompt=tokens, priority=current_priority(), gate=gate,
            generate=True,
            max_tokens=self.options.max_tokens, penalty=self.options.repeat_penalty,
            bias=self._no_calls() if plain and self.tools else None, drafts=drafts,
            margins=[] if self.traces is not None else None))
        self._live = job
        if self.traces is not None and job.margins is not None:
            self.traces.append((job.generated, job.margins))
        # A token may end mid-character: the decoder keeps the rest for the next one.
        utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            while (item := job.out.get()) is not END:
                self.shared.wake()
                self.tokens_generated += 1
                text = utf8.decode(self.llama.detokenize([int(item)]))  # type: ignore[call-overload]
                if text:
                    yield text
                elif gate is not None:
                    gate.seen()  # half a character: nothing for the reader to take
            if job.error is not None:
                raise job.error
        finally:
            self._live = None
            job.cancelled.set()
            self.shared.wake()

    def promote(self) -> None:
        """The reply being made is now a confirmed turn's (pipeline.answer.reply.Reply.commit)."""
        job = self._live
        if job is not None:
            job.promote()
            self.shared.wake()

    def warm(self, history: Sequence[Message]) -> None:
        if self.tools:
            self._no_calls()  # built once for every conversation, before any turn
        self._extend(self.next_prompt_start(history))

    def _no_calls(self) -> dict[int, float]:
        if self.shared.call_bias is None:
            self.shared.call_bias = super()._no_calls()
        return self.shared.call_bias

    def _extend(self, tokens: list[int]) -> None:
        job = self.shared.submit(Job(key=self.key, prompt=tokens, priority=current_priority()))
        job.done.wait()
        if job.error is not None:
            raise job.error

    def close(self) -> None:
        self.shared.forget(self.key)
