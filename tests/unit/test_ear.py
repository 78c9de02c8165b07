"""pipeline/listen/ear.py: transcription jobs due together go as one batch, each caller gets its
own transcript, and a caption never holds a turn back."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from pipeline.compute.workers import Priority
from pipeline.events import Pcm
from pipeline.listen.ear import Ear
from tests.fakes import Workers
from tests.unit.test_workers import Gate, occupy

pytestmark = pytest.mark.timeout(10)


class Batching:
    """Transcribes a clip as 'clip N' (N: its length in samples); records each call."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[list[int]] = []
        self.fail = fail

    def transcribe(self, pcm: Pcm, context: str = "", *, vocabulary: str | None = None) -> str:
        self.calls.append([len(pcm)])
        return f"clip {len(pcm)}" + (f" ({vocabulary})" if vocabulary else "")

    def transcribe_many(self, pcms: Sequence[Pcm]) -> list[str]:
        self.calls.append([len(p) for p in pcms])
        if self.fail:
            raise RuntimeError("the model failed")
        return [f"clip {len(p)}" for p in pcms]


class OneAtATime:
    def __init__(self) -> None:
        self.calls = 0

    def transcribe(self, pcm: Pcm, context: str = "", *, vocabulary: str | None = None) -> str:
        self.calls += 1
        return f"clip {len(pcm)}"


def clip(n: int) -> Pcm:
    return np.zeros(n, np.int16)


async def due_together(ear: Ear, jobs: list[tuple[int, Priority]]) -> list[str]:
    """Start `jobs` while the worker is busy, then let it go: they are due together."""
    gate, gate_task = await occupy(ear.worker)
    tasks = [asyncio.create_task(ear.transcribe(clip(n), priority=p)) for n, p in jobs]
    await asyncio.sleep(0.05)
    gate.opened.set()
    await gate_task
    return list(await asyncio.gather(*tasks))


async def test_two_turns_due_together_are_one_batch_and_each_gets_its_own_words(
        workers: Workers) -> None:
    model = Batching()
    ear = Ear(model, workers("asr"))
    texts = await due_together(ear, [(100, Priority.CONFIRMED), (200, Priority.SPECULATIVE)])
    assert texts == ["clip 100", "clip 200"]
    assert model.calls == [[100, 200]]
    assert (ear.stats.asr_batches, ear.stats.asr_batched_jobs) == (1, 2)


async def test_a_batch_takes_at_most_max_batch_jobs(workers: Workers) -> None:
    model = Batching()
    ear = Ear(model, workers("asr"), max_batch=2)
    texts = await due_together(ear, [(1, Priority.CONFIRMED), (2, Priority.CONFIRMED),
                                     (3, Priority.CONFIRMED)])
    assert texts == ["clip 1", "clip 2", "clip 3"]
    assert model.calls == [[1, 2], [3]]


async def test_a_caption_never_joins_a_turns_batch(workers: Workers) -> None:
    model = Batching()
    ear = Ear(model, workers("asr"))
    texts = await due_together(ear, [(1, Priority.BACKGROUND), (2, Priority.CONFIRMED)])
    assert texts == ["clip 1", "clip 2"]
    assert sorted(model.calls) == [[1], [2]]
    assert model.calls[0] == [2]  # the turn first: the worker's priority order


async def test_a_job_with_its_own_vocabulary_goes_alone_and_reaches_the_model_with_it(
    workers: Workers,
) -> None:
    model = Batching()
    ear = Ear(model, workers("asr"))
    gate, gate_task = await occupy(ear.worker)
    biased = asyncio.create_task(ear.transcribe(clip(1), vocabulary="Mm-hm."))
    plain = [asyncio.create_task(ear.transcribe(clip(n))) for n in (2, 3)]
    await asyncio.sleep(0.05)
    gate.opened.set()
    await gate_task
    assert await biased == "clip 1 (Mm-hm.)"
    assert await asyncio.gather(*plain) == ["clip 2", "clip 3"]
    assert sorted(model.calls) == [[1], [2, 3]]


async def test_a_failed_batch_fails_every_job_in_it(workers: Workers) -> None:
    ear = Ear(Batching(fail=True), workers("asr"))
    gate, gate_task = await occupy(ear.worker)
    tasks = [asyncio.create_task(ear.transcribe(clip(n))) for n in (1, 2)]
    await asyncio.sleep(0.05)
    gate.opened.set()
    await gate_task
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert [str(r) for r in results] == ["the model failed"] * 2


async def test_a_cancelled_job_is_not_transcribed(workers: Workers) -> None:
    model = Batching()
    ear = Ear(model, workers("asr"))
    gate, gate_task = await occupy(ear.worker)
    gone = asyncio.create_task(ear.transcribe(clip(1)))
    kept = asyncio.create_task(ear.transcribe(clip(2)))
    await asyncio.sleep(0.05)
    gone.cancel()
    await asyncio.sleep(0.05)
    gate.opened.set()
    await gate_task
    assert await kept == "clip 2"
    assert model.calls == [[2]]


async def test_a_transcriber_without_batches_runs_one_job_at_a_time(workers: Workers) -> None:
    model = OneAtATime()
    ear = Ear(model, workers("asr"))
    texts = await due_together(ear, [(1, Priority.CONFIRMED), (2, Priority.CONFIRMED)])
    assert texts == ["clip 1", "clip 2"]
    assert model.calls == 2 and ear.stats.asr_batches == 0


async def test_a_job_carried_by_a_batch_does_not_wait_for_its_own_turn(workers: Workers) -> None:
    """B rides in A's batch while B's own (speculative) job is still queued behind a slow
    confirmed job: B is answered when the batch is done, not after the slow job."""
    model = Batching()
    ear = Ear(model, workers("asr"))
    gate, gate_task = await occupy(ear.worker)
    a = asyncio.create_task(ear.transcribe(clip(1), priority=Priority.CONFIRMED))
    b = asyncio.create_task(ear.transcribe(clip(2), priority=Priority.SPECULATIVE))
    await asyncio.sleep(0.05)
    slow = Gate()
    slow_task = asyncio.create_task(ear.worker.run(slow))  # queued ahead of B's own job
    await asyncio.sleep(0.05)
    gate.opened.set()
    await gate_task
    try:
        assert await a == "clip 1"
        await asyncio.to_thread(slow.entered.wait, 5)  # the worker is in the slow job
        assert await asyncio.wait_for(b, 1) == "clip 2"
        assert model.calls == [[1, 2]]
    finally:
        slow.opened.set()
        await slow_task
