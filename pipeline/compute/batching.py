"""Continuous batching for one LLM shared by every conversation: the pure parts.

Each conversation's work is a `Job`: tokens to read into its sequence of the shared KV
(a prompt, a prefill), then, for a reply, tokens to generate. The engine
(models/shared_llm.py) calls `plan` before every decode step: it picks which jobs take
part and how many tokens each brings — one for a reply being decoded (plus the tokens of
a draft being verified), a chunk of its prompt for one being read — so three replies cost
one step, not three. `choose` is greedy decoding with llama.cpp's repeat penalty, so a
reply is the one a context of its own would give.

Who goes first: the most urgent class (a confirmed turn, then speculation, then
background prefills), then the earliest deadline. Under load (`SPECULATION_LIMIT`
confirmed replies at once) speculative work waits, and background work runs only when
nothing else does. A reply whose reader has fallen behind (`MAX_AHEAD` tokens unread:
its first clause is being synthesized) sits out, leaving the CPU to the voice.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from pipeline.compute.gate import Gate
from pipeline.compute.workers import Priority

DEADLINE_S = {Priority.CONFIRMED: 0.8, Priority.SPECULATIVE: 1.5, Priority.BACKGROUND: 5.0}
"""How soon a job of each class should be done, from when it is asked: a confirmed turn's
first audio is due within the SLO, a speculation before the user's pause ends, a prefill
before the next turn."""

SPECULATION_LIMIT = 2
"""Confirmed replies in flight from which speculative jobs wait."""

MAX_AHEAD = 3
"""Unread tokens at which a reply waits for its reader."""

READER_GRACE_S = 0.004
"""How long a step waits for a reply in lockstep whose reader is about to take its last
token (pipeline.compute.gate): it rides in the step instead of sitting one out (~55 ms)."""

PREFILL_CHUNK = 64
"""Prompt tokens a job reads per step while other replies are decoding: a long prompt
does not stall everyone's next token."""

PENALTY_LAST_N = 64
"""Generated tokens the repeat penalty looks back over (llama-cpp-python's default)."""

_arrivals = itertools.count()


@dataclass(eq=False)
class Job:
    """One conversation's request to the shared LLM."""

    key: int
    """The conversation (its sequence in the shared KV)."""
    prompt: list[int]
    """Every token the sequence must hold before generating (its KV keeps the longest
    common prefix; the rest is read)."""
    priority: Priority = Priority.CONFIRMED
    generate: bool = False
    max_tokens: int = 80
    penalty: float = 1.1
    bias: dict[int, float] | None = None
    drafts: Sequence[object] = ()
    """Draft sources (pipeline.answer.drafts.DraftSource) whose proposals are verified in the
    same step as the reply's next token."""
    gate: Gate | None = None
    """While closed, the job is not stepped: its reply's first clause is being spoken and
    the CPU is the speech's (pipeline.answer.reply), not spent decoding ahead; in lockstep,
    its reader has not taken its last token yet (pipeline.compute.gate)."""
    deadline: float = 0.0
    arrival: int = field(default_factory=lambda: next(_arrivals))
    pending: list[int] = field(default_factory=list)
    """Prompt tokens not read yet (set by the engine when the job is admitted)."""
    generated: list[int] = field(default_factory=list)
    next_token: int | None = None
    """Chosen but not yet read into the KV."""
    proposal: list[int] = field(default_factory=list)
    out: queue.Queue[object] = field(default_factory=queue.Queue)
    done: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    admitted: bool = False
    margins: list[float] | None = None
    """When a list: each chosen token's lead over the runner-up (tests: where two tokens
    nearly tie, rounding may decide)."""

    def __post_init__(self) -> None:
        if not self.deadline:
            self.deadline = time.monotonic() + DEADLINE_S[Priority(self.priority)]

    def promote(self) -> None:
        """The user's turn ended: a speculative job is now a confirmed turn's (its class
        and deadline), not left behind other conversations' confirmed replies."""
        if self.priority > Priority.CONFIRMED:
            self.priority = Priority.CONFIRMED
            self.deadline = min(self.deadline,
                                time.monotonic() + DEADLINE_S[Priority.CONFIRMED])

    @property
    def decoding(self) -> bool:
        return self.admitted and not self.pending and self.next_token is not None

    def urgency(self) -> tuple[int, float, int]:
        return (int(self.priority), self.deadline, self.arrival)

    def waiting_for_reader(self) -> bool:
        return self.generate and self.out.qsize() >= MAX_AHEAD


@dataclass(frozen=True)
class Pick:
    job: Job
    tokens: list[int]
    """What this job brings to the step: a prompt chunk, or its next token + a draft."""
    reads_prompt: bool


def plan(jobs: Sequence[Job], budget: int, chunk: int = PREFILL_CHUNK) -> list[Pick]:
    """The jobs that take part in the next step, most urgent first, within `budget`
    tokens. Jobs not yet admitted must be admitted (their `pending` set) before."""
    live = sorted((j for j in jobs if not j.done.is_set() and not j.cancelled.is_set()
                   and not j.waiting_for_reader()), key=Job.urgency)
    classes = {j.priority for j in live}
    confirmed = sum(1 for j in live if j.priority == Priority.CONFIRMED and j.generate)
    picks: list[Pick] = []
    used = 0
    decoding_others = any(j.decoding for j in live)
    for job in live:
        if job.gate is not None and not job.gate.is_open:
            continue  # its first audio is being made: the CPU is the speech's
        if job.priority == Priority.BACKGROUND and classes - {Priority.BACKGROUND}:
            continue  # background work runs only when nothing else waits
        if job.priority == Priority.SPECULATIVE and confirmed >= SPECULATION_LIMIT:
            continue  # under load, speculation waits
        if job.decoding:
            assert job.next_token is not None
            tokens = [job.next_token, *job.proposal]
            tokens = tokens[: max(1, budget - used)]
            picks.append(Pick(job, tokens, False))
        elif job.pending:
            room = budget - used
            if decoding_others or picks:
                room = min(room, chunk)
            if room <= 0:
                continue
            picks.append(Pick(job, job.pending[:room], True))
        else:
            continue
        used += len(picks[-1].tokens)
        if used >= budget:
            break
    return picks


def reader_due(jobs: Sequence[Job], grace_s: float = READER_GRACE_S) -> float:
    """Seconds the next step should wait for a reply in lockstep whose reader has had its
    last token for less than `grace_s` (0: none is due)."""
    due = 0.0
    for job in jobs:
        gate = job.gate
        if gate is None or not job.generate or job.done.is_set() or job.cancelled.is_set():
            continue
        if gate.awaiting_reader:
            due = max(due, grace_s - gate.awaited_s())
    return due


def choose(logits: npt.NDArray[np.float32], recent: Sequence[int], penalty: float,
           bias: dict[int, float] | None = None, margins: list[float] | None = None) -> int:
    """Greedy choice after llama.cpp's repeat penalty over the `recent` generated tokens
    (a positive logit divided by `penalty`, a negative one multiplied) and a logit bias.
    `margins`: the choice's lead over the runner-up is appended."""
    if (penalty == 1.0 or not recent) and not bias and margins is None:
        return int(np.argmax(logits))
    row = logits.copy()
    if penalty != 1.0 and recent:
        seen = np.unique(np.asarray(recent[-PENALTY_LAST_N:], np.intp))
        values = row[seen]
        row[seen] = np.where(values > 0, values / penalty, values * penalty)
    if bias:
        ids = np.fromiter(bias.keys(), np.intp, len(bias))
        row[ids] += np.fromiter(bias.values(), np.float32, len(bias))
    if margins is not None:
        top = np.partition(row, -2)[-2:]
        margins.append(float(top[1] - top[0]))
    return int(np.argmax(row))
