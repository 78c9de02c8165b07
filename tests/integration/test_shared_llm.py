"""The shared, batched LLM (models/shared_llm.py) with the embedded model: batching, KV
eviction and drafts change how fast a reply comes, not what it says.

"Not what it says" up to rounding: llama.cpp's CPU kernels are not batch-invariant (a
matrix product over 1 token and over 4 takes different kernels, which round differently;
measured here: the same logits differ by up to ~0.08 between a reply decoded alone and in
a batch). Where the model's top two tokens lie closer than that, greedy decoding may
take the other one. So two runs must give the same tokens up to the first token where
they differ, and there both runs' leads over the runner-up must be such a near-tie
(< TIE); anything else (a mixed-up sequence, a stale KV) differs by whole logits."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from models.load import open_responder, open_shared
from models.locate import locate
from models.shared_llm import SharedLlama
from models.shared_responder import SeqResponder
from pipeline.answer.llm import LlmOptions, Message
from pipeline.compute.gate import Gate
from pipeline.compute.workers import ModelWorker

pytestmark = pytest.mark.integration

OPTIONS = LlmOptions()
TIE = 0.3
"""A lead over the runner-up (in logits) that rounding between kernels can overturn."""
Trace = list[tuple[list[int], list[float]]]
CONVERSATIONS = [
    ["What is the capital of France?", "And of Italy?"],
    ["How many days are there in a week?", "And in a year?"],
    ["Who wrote Romeo and Juliet?", "When did he live?"],
]


@pytest.fixture(scope="module")
def shared() -> Iterator[SharedLlama]:
    engine = open_shared(locate("llm").path, OPTIONS, sequences=4)
    yield engine
    engine.close()


def agree(a: Trace, b: Trace) -> int:
    """Checks two runs' replies agree (see the module's note); how many diverged."""
    assert len(a) == len(b)
    diverged = 0
    for (tokens_a, leads_a), (tokens_b, leads_b) in zip(a, b, strict=True):
        pairs = zip(tokens_a, tokens_b, strict=False)
        at = next((i for i, (x, y) in enumerate(pairs) if x != y), None)
        if at is None and len(tokens_a) == len(tokens_b):
            continue
        if at is None:  # one ended (its end-of-text token is not kept) where the other went on
            at = min(len(tokens_a), len(tokens_b))
        diverged += 1
        assert leads_a[at] < TIE and leads_b[at] < TIE, (at, leads_a[at], leads_b[at])
    return diverged


def converse(responder: SeqResponder | object, questions: list[str]) -> list[str]:
    history: list[Message] = []
    replies = []
    for question in questions:
        reply = "".join(responder.reply(history, question)).strip()  # type: ignore[attr-defined]
        replies.append(reply)
        history += [Message("user", question), Message("assistant", reply)]
        responder.prefill(history)  # type: ignore[attr-defined]
    return replies


def open_seq(shared: SharedLlama) -> SeqResponder:
    seq = SeqResponder(shared, "embedded", OPTIONS)
    seq.traces = []
    seq.warm([])
    return seq


def traced(shared: SharedLlama, questions: list[str]) -> Trace:
    seq = open_seq(shared)
    converse(seq, questions)
    seq.close()
    assert seq.traces is not None
    return seq.traces


def test_batched_replies_are_the_replies_each_conversation_gets_alone(
        shared: SharedLlama) -> None:
    alone = [traced(shared, questions) for questions in CONVERSATIONS]
    together: list[Trace] = [[] for _ in CONVERSATIONS]
    steps, tokens = shared.steps, shared.batched_tokens

    def run(i: int) -> None:
        together[i] = traced(shared, CONVERSATIONS[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(CONVERSATIONS))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    diverged = sum(agree(a, b) for a, b in zip(alone, together, strict=True))
    assert diverged <= 4  # of 6 (measured 0-2): each at a near-tie, checked by agree()
    assert all(tokens for trace in alone for tokens, _ in trace)
    # They were decoded together: fewer steps than tokens, by a margin.
    assert shared.batched_tokens - tokens > 1.5 * (shared.steps - steps)


def test_the_shared_engine_says_what_a_context_of_its_own_says(shared: SharedLlama) -> None:
    own = open_responder(locate("llm").path, OPTIONS)
    try:
        own.warm([])
        assert converse(open_seq(shared), CONVERSATIONS[0]) == converse(own, CONVERSATIONS[0])
    finally:
        own.close()


def test_an_evicted_conversation_is_read_again_and_says_the_same() -> None:
    small = open_shared(locate("llm").path, OPTIONS, sequences=2)
    try:
        first, second = open_seq(small), open_seq(small)
        history = [Message("user", "What is the capital of France?"),
                   Message("assistant", "The capital of France is Paris.")]
        first.prefill(history)
        assert small.kv_held(first.key) > 0
        converse(second, CONVERSATIONS[1][:1])  # the only sequence goes to the other one
        assert small.kv_held(first.key) == 0
        again = "".join(first.reply(history, "And of Italy?"))
        fresh = open_seq(small)
        assert again == "".join(fresh.reply(history, "And of Italy?"))
    finally:
        small.close()


def test_a_draft_is_verified_in_the_step_and_never_changes_the_reply(
        shared: SharedLlama) -> None:
    question = "What is the capital of France?"
    plain = "".join(open_seq(shared).reply([], question))
    accepted = shared.draft_stats.accepted
    assert "".join(open_seq(shared).reply([], question, draft=plain)) == plain
    assert shared.draft_stats.accepted - accepted >= 3
    assert "".join(open_seq(shared).reply([], question, draft="Rome is nice.")) == plain


def test_a_reply_closed_half_way_frees_the_engine_for_the_next(shared: SharedLlama) -> None:
    seq = open_seq(shared)
    pieces = seq.reply([], "Tell me a long story about a dragon.")
    next(pieces)
    pieces.close()
    assert "".join(seq.reply([], "What is the capital of France?")).strip()
    seq.close()
    for _ in range(200):  # freed by the decoding thread, before its next step
        if shared.kv_held(seq.key) == 0:
            break
        time.sleep(0.01)
    assert shared.kv_held(seq.key) == 0


async def test_in_lockstep_the_engine_takes_no_step_till_the_reader_has_its_token(
        shared: SharedLlama) -> None:
    """Before a reply's first clause its reader may close the gate on any token: the
    engine must not have begun the next step by then (it would hold the CPU ~55 ms from
    clause 1's audio). Past the first clause it decodes ahead again."""
    seq = open_seq(shared)
    worker = ModelWorker("llm-lockstep")
    gate = Gate(lockstep=True, reader_timeout_s=5)
    stream = worker.stream(seq.reply, [], "Tell me a long story about a dragon.", gate=gate)
    try:
        assert await anext(stream)
        steps = shared.steps
        await asyncio.sleep(0.3)  # five steps' time on 2 cores
        assert shared.steps == steps
        gate.end_lockstep()
        await asyncio.sleep(0.3)
        assert shared.steps > steps
    finally:
        await stream.aclose()
        worker.close()
        seq.close()
