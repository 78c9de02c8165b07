"""Model workers: blocking calls in a thread, priority order, streams consumed in-thread."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator

import pytest

from pipeline.compute import workers as compute
from pipeline.compute.workers import CpuLock, ModelWorker, Priority, current_gate
from tests.fakes import Workers, until

pytestmark = pytest.mark.timeout(10)


class Gate:
    """A job that holds the worker busy until the test opens it."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()

    def __call__(self) -> str:
        self.entered.set()
        self.opened.wait(5)
        return "gate"


async def occupy(worker: ModelWorker) -> tuple[Gate, asyncio.Task[str]]:
    """Start a blocking job and wait until the worker is inside it."""
    gate = Gate()
    task = asyncio.create_task(worker.run(gate))
    await asyncio.to_thread(gate.entered.wait, 5)
    return gate, task


async def test_run_returns_the_result_computed_in_the_worker_thread(workers: Workers) -> None:
    worker = workers("asr")
    result = await worker.run(lambda a, b: (a + b, threading.current_thread().name), 2, 3)
    assert result == (5, "apace-asr")
    assert threading.current_thread().name != "apace-asr"


async def test_run_raises_the_exception_of_the_job_in_the_awaiting_task(workers: Workers) -> None:
    worker = workers("asr")
    error = ValueError("bad audio")

    def fail() -> None:
        raise error

    with pytest.raises(ValueError, match="bad audio") as raised:
        await worker.run(fail)
    assert raised.value is error
    assert await worker.run(lambda: "still alive") == "still alive"


async def test_queued_confirmed_jobs_run_before_speculative_ones(workers: Workers) -> None:
    worker = workers("llm")
    gate, gate_task = await occupy(worker)
    order: list[str] = []
    jobs = [
        asyncio.create_task(worker.run(order.append, name, priority=priority))
        for name, priority in [
            ("background", Priority.BACKGROUND),
            ("speculative", Priority.SPECULATIVE),
            ("confirmed-1", Priority.CONFIRMED),
            ("confirmed-2", Priority.CONFIRMED),
        ]
    ]
    await asyncio.sleep(0.01)  # every job is queued behind the gate
    assert order == []
    gate.opened.set()
    await asyncio.gather(gate_task, *jobs)
    assert order == ["confirmed-1", "confirmed-2", "speculative", "background"]


async def test_a_cancelled_run_that_has_not_started_is_skipped(workers: Workers) -> None:
    worker = workers("asr")
    gate, gate_task = await occupy(worker)
    ran: list[str] = []
    skipped = asyncio.create_task(worker.run(ran.append, "skipped"))
    await asyncio.sleep(0.01)
    skipped.cancel()
    with pytest.raises(asyncio.CancelledError):
        await skipped
    gate.opened.set()
    await gate_task
    await worker.run(ran.append, "after")
    assert ran == ["after"]


async def test_stream_yields_the_items_of_a_generator_run_in_the_worker_thread(
    workers: Workers,
) -> None:
    worker = workers("tts")
    threads: list[str] = []

    def count(n: int) -> Iterator[int]:
        for i in range(n):
            threads.append(threading.current_thread().name)
            yield i

    items = [item async for item in worker.stream(count, 5)]
    assert items == [0, 1, 2, 3, 4]
    assert set(threads) == {"apace-tts"}
    assert threading.current_thread().name not in threads


async def test_a_streams_gate_is_known_in_its_thread_and_not_in_the_next_job(
    workers: Workers,
) -> None:
    """A model that decodes ahead on a thread of its own reads the stream's gate there
    (models/shared_responder.py): the job after it must not see it."""
    worker, gate = workers("llm"), compute.Gate()
    seen: list[compute.Gate | None] = []

    def gated() -> Iterator[int]:
        seen.append(current_gate())
        yield 1

    assert [i async for i in worker.stream(gated, gate=gate)] == [1]
    await worker.run(lambda: seen.append(current_gate()))
    assert [i async for i in worker.stream(gated)] == [1]
    assert seen == [gate, None, None]


async def test_a_stream_in_lockstep_makes_its_next_item_only_once_the_reader_is_back(
    workers: Workers,
) -> None:
    """The reader can close the gate on an item (the reply's first clause) before the
    worker has begun the next: no step is under way when clause 1's audio is asked for."""
    made: list[int] = []

    def counting() -> Iterator[int]:
        for i in range(3):
            made.append(i)
            yield i

    for lockstep, ahead in ((True, [0]), (False, [0, 1])):
        gate = compute.Gate(lockstep=lockstep, reader_timeout_s=5)
        made.clear()
        stream = workers("llm").stream(counting, gate=gate)
        assert await anext(stream) == 0
        await asyncio.sleep(0.1)
        assert made[:2] == ahead, lockstep  # free-running, it had made the next already
        gate.close()
        gate.end_lockstep()
        await asyncio.sleep(0.1)
        assert made[:2] == ahead  # closed before the next step: it waits
        gate.open()
        assert [i async for i in stream] == [1, 2]


async def test_a_reader_that_does_not_come_back_stalls_a_lockstep_stream_only_briefly(
    workers: Workers,
) -> None:
    made: list[int] = []

    def counting() -> Iterator[int]:
        for i in range(2):
            made.append(i)
            yield i

    gate = compute.Gate(lockstep=True, reader_timeout_s=0.05)
    stream = workers("llm").stream(counting, gate=gate)
    assert await anext(stream) == 0
    await until(lambda: made == [0, 1], what="the next item after the reader's timeout")
    assert [i async for i in stream] == [1]


async def test_stream_raises_the_generator_error_after_its_earlier_items(
    workers: Workers,
) -> None:
    worker = workers("tts")

    def broken() -> Iterator[str]:
        yield "first"
        raise RuntimeError("synthesis failed")

    received: list[str] = []
    with pytest.raises(RuntimeError, match="synthesis failed"):
        async for item in worker.stream(broken):
            received.append(item)
    assert received == ["first"]


class Endless:
    """An endless generator that notes each item it makes and whether it was closed."""

    def __init__(self) -> None:
        self.produced = 0
        self.closed = threading.Event()

    def __call__(self) -> Iterator[int]:
        try:
            while True:
                time.sleep(0.005)
                self.produced += 1
                yield self.produced
        except GeneratorExit:
            self.closed.set()
            raise


async def test_closing_a_stream_early_closes_the_generator_in_its_thread(
    workers: Workers,
) -> None:
    worker = workers("llm")
    endless = Endless()
    stream = worker.stream(endless)
    async with contextlib.aclosing(stream):
        async for item in stream:
            if item == 3:
                break
    assert await asyncio.to_thread(endless.closed.wait, 2)
    stopped_at = endless.produced
    await asyncio.sleep(0.05)
    assert endless.produced == stopped_at  # it makes nothing more
    assert stopped_at <= 5  # it stopped at its next item, not later


async def test_cancelling_the_consuming_task_stops_the_generator(workers: Workers) -> None:
    worker = workers("llm")
    endless = Endless()
    got: list[int] = []

    async def consume() -> None:
        stream = worker.stream(endless)
        async with contextlib.aclosing(stream):
            async for item in stream:
                got.append(item)

    task = asyncio.create_task(consume())
    await until(lambda: len(got) >= 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(endless.closed.wait, 2)
    # The worker is free for the next job once the generator has stopped.
    assert await worker.run(lambda: "next") == "next"


async def test_a_stream_queued_behind_a_blocking_job_waits_its_turn(workers: Workers) -> None:
    worker = workers("tts")
    gate, gate_task = await occupy(worker)
    started = threading.Event()

    def gen() -> Iterator[int]:
        started.set()
        yield 1

    stream = worker.stream(gen)
    first = asyncio.create_task(anext(stream))
    await asyncio.sleep(0.02)
    assert not started.is_set()
    gate.opened.set()
    assert await first == 1
    await stream.aclose()
    await gate_task


def test_close_ends_the_worker_thread() -> None:
    worker = ModelWorker("closing")
    assert worker.alive
    worker.close()
    assert not worker.alive


async def test_close_waits_for_the_job_in_hand_and_drops_the_queued_ones() -> None:
    worker = ModelWorker("closing")
    gate, gate_task = await occupy(worker)
    ran: list[str] = []
    queued = asyncio.create_task(worker.run(ran.append, "queued"))
    await asyncio.sleep(0.01)
    closing = asyncio.create_task(asyncio.to_thread(worker.close))
    await asyncio.sleep(0.01)
    gate.opened.set()
    await closing
    assert await gate_task == "gate"
    assert not worker.alive
    assert ran == []
    queued.cancel()  # its job was dropped: it would wait forever


async def test_busy_s_accumulates_time_spent_in_jobs(workers: Workers) -> None:
    worker = workers("asr")
    await worker.run(time.sleep, 0.05)
    await until(lambda: worker.busy_s > 0)
    assert 0.04 < worker.busy_s < 1.0


def _shared(workers: Workers, *names: str) -> list[ModelWorker]:
    cpu = CpuLock()
    made = [ModelWorker(name, cpu) for name in names]
    workers.all += made
    return made


async def test_workers_sharing_the_cpu_never_compute_at_the_same_time(workers: Workers) -> None:
    asr, llm, tts = _shared(workers, "asr", "llm", "tts")
    inside = 0
    most = 0
    lock = threading.Lock()

    def compute() -> None:
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
        time.sleep(0.01)
        with lock:
            inside -= 1

    def tokens() -> Iterator[int]:
        for i in range(5):
            compute()
            yield i

    async def consume() -> list[int]:
        return [i async for i in llm.stream(tokens)]

    results = await asyncio.gather(consume(), *(w.run(compute) for w in (asr, tts, asr, tts)))
    assert results[0] == [0, 1, 2, 3, 4]
    assert most == 1


async def test_the_most_urgent_waiter_gets_the_cpu_next(workers: Workers) -> None:
    asr, llm, tts, turn = _shared(workers, "asr", "llm", "tts", "turn")
    gate, gate_task = await occupy(asr)
    order: list[str] = []
    waiting = [
        asyncio.create_task(worker.run(order.append, name, priority=priority))
        for worker, name, priority in [
            (llm, "caption", Priority.BACKGROUND),
            (tts, "speculative", Priority.SPECULATIVE),
            (turn, "confirmed", Priority.CONFIRMED),
        ]
    ]
    await asyncio.sleep(0.05)  # all three wait for the CPU, each in its own worker
    assert order == []
    gate.opened.set()
    await asyncio.gather(gate_task, *waiting)
    assert order == ["confirmed", "speculative", "caption"]


async def test_a_stream_lends_the_cpu_between_its_items(workers: Workers) -> None:
    """Piper can speak clause 1 between two LLM tokens: a job that arrives mid-stream runs
    before the stream's next item, not after the whole stream."""
    llm, tts = _shared(workers, "llm", "tts")
    log: list[str] = []
    arrived = threading.Event()

    def tokens() -> Iterator[str]:
        for i in range(4):
            log.append(f"token{i}")
            if i == 1:
                arrived.wait(5)  # computing token 1 when the TTS job arrives
                log.append("token1 done")
            yield str(i)

    async def consume() -> None:
        async for _ in llm.stream(tokens):
            pass

    streaming = asyncio.create_task(consume())
    await until(lambda: "token1" in log)
    speaking = asyncio.create_task(tts.run(log.append, "clause"))
    await asyncio.sleep(0.05)  # the TTS job is waiting for the CPU now
    arrived.set()
    await asyncio.gather(streaming, speaking)
    assert log == ["token0", "token1", "token1 done", "clause", "token2", "token3"]


async def test_waiting_for_the_cpu_is_measured(workers: Workers) -> None:
    asr, tts = _shared(workers, "asr", "tts")
    gate, gate_task = await occupy(asr)
    waiting = asyncio.create_task(tts.run(lambda: None))
    await asyncio.sleep(0.1)
    gate.opened.set()
    await asyncio.gather(gate_task, waiting)
    assert asr.cpu is not None and asr.cpu.waited_s >= 0.09


@pytest.mark.parametrize(("preset", "expected"), [(None, "ACTIVE"), ("PASSIVE", "PASSIVE")])
def test_openmp_is_tuned_before_the_model_libraries_load_unless_the_user_chose(
    preset: str | None, expected: str
) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    if preset:
        env["OMP_WAIT_POLICY"] = preset
    probe = ("import os, pipeline.conversation; tuned = 'GOMP_SPINCOUNT' in os.environ; "
             "import models.llama_responder; "
             "print(tuned, os.environ['OMP_WAIT_POLICY'], os.environ['GOMP_SPINCOUNT'])")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", expected, "300000"]  # the pipeline sets nothing on import
