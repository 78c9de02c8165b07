"""Model workers: blocking model calls run in a dedicated thread, never on the event loop.

One worker owns one model (or one llama context, which is not reentrant). Jobs queue by
priority — confirmed turns before speculative work — and a generator is consumed *inside*
the worker thread, its items handed back to the loop one by one.

Workers that share a `CpuLock` compute one at a time. Every model here (CTranslate2,
llama.cpp, onnxruntime) runs its own threads across all cores and spin-waits between
steps; two at once on a 2-core box do not share the cores, they stall each other:
llama.cpp's time to first token went from 75 ms to 650-6000 ms with faster-whisper
running beside it. With the lock they take turns — per call, and per item of a stream, so
Piper can speak clause 1 between two LLM tokens — in priority order.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import heapq
import itertools
import logging
import queue
import threading
import time
import weakref
from collections.abc import AsyncGenerator, Callable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Generic, TypeVar

from pipeline.compute.gate import Gate

log = logging.getLogger(__name__)
T = TypeVar("T")


class Priority(IntEnum):
    CONFIRMED = 0
    SPECULATIVE = 1
    BACKGROUND = 2


@dataclass(order=True)
class _Job(Generic[T]):
    priority: int
    seq: int
    run: Callable[[threading.Event], None] = field(compare=False)
    cancelled: threading.Event = field(compare=False, default_factory=threading.Event)


_local = threading.local()


def current_priority() -> Priority:
    """The priority of the worker job this thread is running (CONFIRMED outside one):
    a model that schedules its own CPU (models/shared_llm.py) carries it on."""
    return getattr(_local, "priority", Priority.CONFIRMED)


def current_gate() -> Gate | None:
    """The gate of the stream this thread is running (None outside one): a model that
    decodes ahead on a thread of its own (models/shared_llm.py) pauses while it is closed."""
    return getattr(_local, "gate", None)


_STOP = _Job[Any](priority=1 << 30, seq=1 << 62, run=lambda _c: None)
_DONE = object()


class CpuLock:
    """The CPU, lent to one model call at a time: the most urgent waiter goes next
    (priority, then arrival), so a confirmed turn overtakes queued speculative work and
    live captions run only when nothing else waits. A call in progress is not preempted."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._held = False
        self._waiting: list[tuple[int, int]] = []
        self._seq = itertools.count()
        self.waited_s = 0.0
        """Total time calls spent waiting for the CPU (a measure of contention)."""
        self.held_s = 0.0
        """Total time the CPU was lent out: its busy time (pipeline.compute.admission)."""

    @contextlib.contextmanager
    def hold(self, priority: Priority) -> Iterator[None]:
        ticket = (int(priority), next(self._seq))
        started = time.perf_counter()
        with self._cond:
            heapq.heappush(self._waiting, ticket)
            while self._held or self._waiting[0] != ticket:
                self._cond.wait()
            heapq.heappop(self._waiting)
            self._held = True
            acquired = time.perf_counter()
            self.waited_s += acquired - started
        try:
            yield
        finally:
            with self._cond:
                self._held = False
                self.held_s += time.perf_counter() - acquired
                self._cond.notify_all()


class ModelWorker:
    """A thread that runs one model's jobs in priority order."""

    def __init__(self, name: str, cpu: CpuLock | None = None) -> None:
        self.name = name
        self.cpu = cpu
        self._jobs: queue.PriorityQueue[_Job[Any]] = queue.PriorityQueue()
        self._seq = itertools.count()
        self._current: _Job[Any] | None = None
        self._thread = threading.Thread(target=self._loop, name=f"apace-{name}", daemon=True)
        self._thread.start()
        self.busy_s = 0.0
        _LIVE.add(self)

    async def run(
        self, fn: Callable[..., T], *args: Any, priority: Priority = Priority.CONFIRMED
    ) -> T:
        """Run `fn(*args)` in the worker; await its result.

        Cancel-safe: a job not yet started is skipped; one already running finishes in its
        thread (C code cannot be interrupted) and its result is dropped.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def run(cancelled: threading.Event) -> None:
            _local.priority, _local.gate = priority, None
            try:
                with self._hold(priority):
                    if cancelled.is_set():
                        return
                    result = fn(*args)
            except BaseException as error:  # handed to the awaiting task, not swallowed
                _hand(loop, _settle, future, None, error)
            else:
                _hand(loop, _settle, future, result, None)

        job = self._submit(run, priority)
        try:
            return await future
        finally:
            job.cancelled.set()

    async def stream(
        self,
        make: Callable[..., Iterator[T]],
        *args: Any,
        priority: Priority = Priority.CONFIRMED,
        gate: Gate | None = None,
    ) -> AsyncGenerator[T, None]:
        """Iterate `make(*args)` inside the worker; yields its items on the loop.

        While `gate` is closed the worker waits before taking the next item, leaving the
        CPU to more urgent work (up to the gate's timeout); in lockstep it also waits till
        the reader is back for the next item (pipeline.compute.gate).
        Cancel-safe: closing or cancelling the async iterator stops the generator at its
        next item (it is closed in the worker thread, where it runs).
        """
        loop = asyncio.get_running_loop()
        items: asyncio.Queue[Any] = asyncio.Queue()

        def run(cancelled: threading.Event) -> None:
            if cancelled.is_set():
                return
            _local.priority, _local.gate = priority, gate
            generator = make(*args)
            try:
                while True:
                    with self._hold(priority):
                        if cancelled.is_set():
                            break
                        item = next(generator, _DONE)
                    if item is _DONE:
                        break
                    if gate is not None:
                        gate.handed()
                    if not _hand(loop, items.put_nowait, item):
                        break  # nobody is listening any more (the loop is closed)
                    if gate is not None:
                        gate.wait()
                    if cancelled.is_set():
                        break
            except BaseException as error:
                _hand(loop, items.put_nowait, _Failure(error))
            finally:
                if hasattr(generator, "close"):
                    generator.close()
                _hand(loop, items.put_nowait, _DONE)

        job = self._submit(run, priority)
        try:
            while (item := await items.get()) is not _DONE:
                if isinstance(item, _Failure):
                    raise item.error
                yield item
                if gate is not None:
                    gate.seen()  # the reader is back for the next: it has taken this one
        finally:
            job.cancelled.set()
            if gate is not None:
                gate.seen()
                gate.open()

    def close(self, finally_run: Callable[[], object] | None = None, *, wait: float = 5.0) -> None:
        """Stop the thread after the job in hand; queued jobs are dropped.

        `finally_run` (e.g. freeing the model) runs in the thread before it exits. Never
        blocks the caller when `wait` is 0, so it is safe in cleanup that may itself be
        cancelled.
        """
        while True:
            try:
                self._jobs.get_nowait().cancelled.set()
            except queue.Empty:
                break
        if finally_run is not None:
            final = finally_run
            self._jobs.put(_Job[Any](priority=_STOP.priority - 1, seq=0,
                                     run=lambda _cancelled: _call(final)))
        self._jobs.put(_STOP)
        if wait and threading.current_thread() is not self._thread:
            self._thread.join(wait)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _hold(self, priority: Priority) -> contextlib.AbstractContextManager[None]:
        return self.cpu.hold(priority) if self.cpu is not None else contextlib.nullcontext()

    def cancel_current(self) -> None:
        """Tell the job in hand (if any) to stop at its next item."""
        if (job := self._current) is not None:
            job.cancelled.set()

    def _submit(self, run: Callable[[threading.Event], None], priority: Priority) -> _Job[Any]:
        job = _Job[Any](priority=int(priority), seq=next(self._seq), run=run)
        self._jobs.put(job)
        return job

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not _STOP:
            started = time.perf_counter()
            self._current = job
            try:
                job.run(job.cancelled)
            except BaseException:  # a job's own errors go to its awaiter; this is a bug
                log.exception("worker %s: job crashed", self.name)
            self._current = None
            self.busy_s += time.perf_counter() - started


_LIVE: weakref.WeakSet[ModelWorker] = weakref.WeakSet()


@atexit.register
def _finish_jobs_in_hand() -> None:
    """Let every worker finish the model call in hand before the process exits.

    The threads are daemons (a stuck one must not hang the exit), but one still inside
    llama.cpp when C++ static destructors run reads freed memory: measured as a segfault
    at exit in ggml_cpu_extra_compute_forward when a reply was cut short by the end of input.
    """
    for worker in list(_LIVE):
        worker.cancel_current()  # a stream stops at its next item
        worker.close(wait=5.0)


@dataclass(frozen=True)
class _Failure:
    error: BaseException


def _call(fn: Callable[[], object]) -> None:
    fn()


def _hand(loop: asyncio.AbstractEventLoop, fn: Callable[..., object], *args: Any) -> bool:
    """Call `fn(*args)` on the loop's thread; False if the loop has closed meanwhile."""
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # "Event loop is closed": the awaiting side is gone
        return False
    return True


def _settle(future: asyncio.Future[T], result: T | None, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)  # type: ignore[arg-type]
