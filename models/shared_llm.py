"""One LLM for every conversation: a shared llama.cpp context, continuously batched.

The weights are loaded once, with one llama context whose KV holds `sequences` streams
of `n_ctx` tokens (llama.cpp's multi-sequence KV, one stream per sequence). Sequence 0
holds the system prompt, read once and copied to each conversation that gets a sequence;
a conversation keeps its sequence between turns, and when every sequence is taken the
least recently used idle conversation is evicted (its KV is read again from its history
when it comes back). Streams, not one unified KV whose cells the sequences share: a
sequence's attention then never depends on where its cells lie among the others', so a
reply is bit for bit the one a context of its own gives (with a unified KV, where two
tokens nearly tie, greedy decoding followed the rounding: 1 reply in 3 of the test
conversations changed). One thread decodes: before each step it asks `pipeline.compute.batching.plan`
which jobs take part, puts their tokens in one batch (a reply's next token and its
draft, a chunk of a prompt), decodes once under the CPU lock, and hands each reply its
tokens (models/shared_responder.py: the `Responder` each conversation uses).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np

from models import llama_internals
from pipeline.answer.llm import common_prefix
from pipeline.compute.batching import Job, Pick, choose, plan, reader_due
from pipeline.compute.stats import DraftStats
from pipeline.compute.workers import CpuLock, Priority

if TYPE_CHECKING:
    from llama_cpp import Llama

log = logging.getLogger(__name__)

END = object()
"""What a job's queue holds after its last token."""


class KvFull(RuntimeError):
    """Every sequence of the shared KV is in use by a conversation with work in flight."""


class SharedLlama:
    """The shared model, its KV of `sequences` streams of `n_ctx` tokens (sequence 0:
    the system prompt), and the thread that decodes."""

    def __init__(self, llama: Llama, *, n_ctx: int, sequences: int, threads: int,
                 cpu: CpuLock | None = None, batch: int = 512,
                 draft_stats: DraftStats | None = None) -> None:
        import llama_cpp

        self.llama = llama
        self.cpu = cpu
        self.batch_tokens = min(batch, n_ctx)
        self.sequences = max(2, min(sequences, int(llama_cpp.llama_max_parallel_sequences())))
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx * self.sequences
        params.n_batch = params.n_ubatch = self.batch_tokens
        params.n_seq_max = self.sequences
        params.kv_unified = False
        params.n_threads = params.n_threads_batch = threads
        params.no_perf = True
        # As a Llama of llama-cpp-python has it (a different attention kernel rounds
        # differently, and greedy decoding follows the rounding where two tokens tie).
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        self._ctx = llama_internals.open_context(llama, params)
        self._batch = llama_internals.open_batch(self.batch_tokens)
        self.n_vocab = llama.n_vocab()
        self.n_ctx = n_ctx
        self.draft_stats = draft_stats or DraftStats()
        self._eog = llama_internals.end_tokens(llama)
        self._held: dict[int, list[int]] = {0: []}
        """Tokens each sequence's KV holds (0: the shared prompt start)."""
        self._slots: OrderedDict[int, int] = OrderedDict()
        """Conversation key → sequence, least recently used first."""
        self._jobs: list[Job] = []
        self._forgotten: list[int] = []
        self._cond = threading.Condition()
        self._closed = False
        self.steps = 0
        self.batched_tokens = 0
        self.call_bias: dict[int, float] | None = None
        """The logit bias that keeps tool calls out (SeqResponder._no_calls), built once."""
        self._thread = threading.Thread(target=self._loop, name="apace-llm-shared", daemon=True)
        self._thread.start()
        _LIVE.add(self)

    # -- the conversations' side ------------------------------------------------------

    def submit(self, job: Job) -> Job:
        with self._cond:
            if self._closed:
                raise RuntimeError("the shared LLM is closed")
            self._jobs.append(job)
            self._cond.notify_all()
        return job

    def wake(self) -> None:
        """A reader took tokens: a reply waiting for it may go on."""
        with self._cond:
            self._cond.notify_all()

    def set_template(self, tokens: list[int]) -> None:
        """Sequence 0 holds what every conversation's prompt starts with."""
        self.submit(Job(key=0, prompt=tokens, priority=Priority.BACKGROUND)).done.wait()

    def forget(self, key: int) -> None:
        """A conversation ended: its sequence is freed (by the decoding thread, the only
        one that touches the KV, before its next step)."""
        with self._cond:
            self._forgotten.append(key)
            self._cond.notify_all()

    def kv_held(self, key: int) -> int:
        """Tokens the conversation `key` holds in the KV (0: evicted or none yet)."""
        seq = self._slots.get(key)
        return len(self._held.get(seq, [])) if seq is not None else 0

    def memory(self) -> dict[str, object]:
        """What the shared LLM holds: its KV, reserved and in use per conversation, and
        how many tokens a decode step carried on average."""
        per_token = self.kv_bytes_per_token
        with self._cond:
            held = {key: len(self._held.get(seq, [])) for key, seq in self._slots.items()}
        return {"sequences": self.sequences - 1, "conversations_held": len(held),
                "kv_bytes_per_token": per_token,
                "kv_bytes_reserved": per_token * self.n_ctx * self.sequences,
                "kv_bytes_held": {str(k): n * per_token for k, n in held.items()},
                "steps": self.steps,
                "tokens_per_step": self.batched_tokens / self.steps if self.steps else None}

    @property
    def kv_bytes_per_token(self) -> int:
        return llama_internals.kv_bytes_per_token(self.llama)

    def close(self) -> None:
        """Stop after the step in hand; free the context (idempotent)."""
        with self._cond:
            if self._closed and not self._thread.is_alive():
                return
            self._closed = True
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join(10)
        if not self._thread.is_alive():
            self._batch.close()
            self._ctx.close()

    # -- the decoding thread ----------------------------------------------------------

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not self._runnable():
                    self._cond.wait(0.05)
                if self._closed:
                    for job in self._jobs:
                        self._fail(job, RuntimeError("the shared LLM closed"))
                    return
                self._jobs = [j for j in self._jobs if not j.done.is_set()]
                self._free_forgotten()
                for job in sorted(self._jobs, key=Job.urgency):
                    if not job.admitted and not job.cancelled.is_set():
                        with contextlib.suppress(KvFull):  # it waits for a sequence
                            self._admit(job)
                picks = plan(self._jobs, self.batch_tokens)
                due = reader_due(self._jobs)
                if not picks or due > 0:  # waiting: for readers, or for a sequence to free
                    self._cond.wait(due or 0.01)
                    continue
            self._step(picks)

    def _free_forgotten(self) -> None:
        busy = {j.key for j in self._jobs if j.admitted}
        keep = []
        for key in self._forgotten:
            if key in busy:
                keep.append(key)  # a job of it is in a step: freed after it
            elif key in self._slots:
                self._evict(key)
        self._forgotten = keep

    def _runnable(self) -> bool:
        for job in self._jobs:
            if job.cancelled.is_set() and not job.done.is_set():
                self._finish(job)
        return bool(self._forgotten) or any(
            not j.done.is_set() and not j.waiting_for_reader() for j in self._jobs)

    def _admit(self, job: Job) -> None:
        """Give the job's conversation a sequence and set what it must read."""
        seq = self._sequence(job.key)
        held = self._held[seq]
        keep = common_prefix(held, job.prompt)
        if keep == len(job.prompt) and job.generate:
            keep -= 1  # the last prompt token is read again: its logits choose the first
        if keep < len(held):
            self._memory_rm(seq, keep)
            del held[keep:]
        job.pending = job.prompt[keep:]
        job.admitted = True
        if not job.pending:
            self._finish(job)

    def _sequence(self, key: int) -> int:
        if key == 0:
            return 0
        if key in self._slots:
            self._slots.move_to_end(key)
            return self._slots[key]
        used = set(self._slots.values())
        free = [s for s in range(1, self.sequences) if s not in used]
        if not free:
            busy = {j.key for j in self._jobs if not j.done.is_set()}
            idle = next((k for k in self._slots if k not in busy), None)
            if idle is None:
                raise KvFull("every sequence of the shared LLM is busy")
            free = [self._evict(idle)]
        seq = free[0]
        self._slots[key] = seq
        template = self._held[0]
        self._memory_rm(seq, 0)
        if template:
            import llama_cpp

            # Between streams only a whole sequence can be copied: sequence 0 is exactly
            # the template.
            llama_cpp.llama_memory_seq_cp(self._ctx.memory, 0, seq, -1, -1)
        self._held[seq] = list(template)
        return seq

    def _evict(self, key: int) -> int:
        seq = self._slots.pop(key)
        self._memory_rm(seq, 0)
        self._held[seq] = []
        log.debug("shared LLM: evicted conversation %d from sequence %d", key, seq)
        return seq

    def _memory_rm(self, seq: int, keep: int) -> None:
        import llama_cpp

        llama_cpp.llama_memory_seq_rm(self._ctx.memory, seq, keep, -1)

    def _step(self, picks: list[Pick]) -> None:
        import llama_cpp

        batch = self._batch.batch
        rows: list[tuple[Pick, int]] = []
        n = 0
        for pick in picks:
            seq = self._slots.get(pick.job.key, 0) if pick.job.key else 0
            start = len(self._held[seq])
            last_chunk = pick.reads_prompt and len(pick.tokens) == len(pick.job.pending)
            for i, token in enumerate(pick.tokens):
                batch.token[n] = token
                batch.pos[n] = start + i
                batch.seq_id[n][0] = seq
                batch.n_seq_id[n] = 1
                wants = (not pick.reads_prompt) or (last_chunk and pick.job.generate
                                                     and i == len(pick.tokens) - 1)
                batch.logits[n] = wants
                n += 1
            rows.append((pick, n - len(pick.tokens)))
        batch.n_tokens = n
        urgent = min(int(p.job.priority) for p in picks)
        with self.cpu.hold(Priority(urgent)) if self.cpu else contextlib.nullcontext():
            status = llama_cpp.llama_decode(self._ctx.ctx, batch)
        self.steps += 1
        self.batched_tokens += n
        if status != 0:
            error = RuntimeError(f"llama_decode failed ({status})")
            for pick in picks:
                self._fail(pick.job, error)
            return
        with self._cond:
            for pick, first in rows:
                self._after(pick, first)

    def _after(self, pick: Pick, first: int) -> None:
        """The step is done: the job's tokens are in its sequence; choose what follows."""
        job = pick.job
        seq = self._slots.get(job.key, 0) if job.key else 0
        held = self._held[seq]
        if pick.reads_prompt:
            held.extend(pick.tokens)
            del job.pending[: len(pick.tokens)]
            if job.pending:
                return
            if not job.generate:
                self._finish(job)
                return
            self._emit(job, self._choose(job, first + len(pick.tokens) - 1))
            return
        accepted = 0
        drafted = len(pick.tokens) > 1
        token = self._choose(job, first)
        for i, guess in enumerate(pick.tokens[1:], start=1):
            if token != guess:
                break
            accepted += 1
            if not self._emit(job, token):
                break
            token = self._choose(job, first + i)
        held.extend(pick.tokens[: 1 + accepted])
        if accepted < len(pick.tokens) - 1:
            self._memory_rm(seq, len(held))
        if drafted:
            self.draft_stats.accepted += accepted
        if not job.done.is_set():
            self._emit(job, token)

    def _choose(self, job: Job, row: int) -> int:
        import llama_cpp

        pointer = llama_cpp.llama_get_logits_ith(self._ctx.ctx, row)
        logits = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))
        return choose(logits, job.generated, job.penalty, job.bias, job.margins)

    def _emit(self, job: Job, token: int) -> bool:
        """Hand `token` to the reader; False once the reply has ended."""
        if token in self._eog:
            self._finish(job)
            return False
        job.generated.append(token)
        if job.gate is not None:
            job.gate.handed()  # in lockstep, its next step waits till the reader has it
        job.out.put(token)
        if len(job.generated) >= job.max_tokens:
            self._finish(job)
            return False
        job.next_token = token
        job.proposal = self._propose(job)
        return True

    def _propose(self, job: Job) -> list[int]:
        generated = np.asarray(job.generated, np.intc)
        for source in job.drafts:
            proposal = source.propose(generated, generated)  # type: ignore[attr-defined]
            if len(proposal):
                proposal = [int(t) for t in proposal[:8]]
                self.draft_stats.proposed += len(proposal)
                return proposal
        return []

    def _finish(self, job: Job) -> None:
        if not job.done.is_set():
            job.out.put(END)
            job.done.set()

    def _fail(self, job: Job, error: BaseException) -> None:
        job.error = error
        self._finish(job)


_LIVE: weakref.WeakSet[SharedLlama] = weakref.WeakSet()


@atexit.register
def _stop_at_exit() -> None:
    """Let the decoding thread finish its step before the process exits: a thread still in
    llama_decode when C++ static destructors run reads freed memory (pipeline.compute.workers)."""
    for shared in list(_LIVE):
        shared.close()
