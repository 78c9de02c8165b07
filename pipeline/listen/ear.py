"""One ear for every conversation: transcription jobs on the shared ASR worker, and those
due together transcribed as one batch.

Two people finishing a sentence at the same moment each need Whisper at once. One after
the other, the second waits for the first; as one encoder + decoder batch (a transcriber's
`transcribe_many(pcms)`, where it has one) both are done sooner: tiny.en on a 2-core CPU,
194 ms for two against 301 ms one after the other (`make bench-batching`). A job takes
into its batch the jobs already waiting whose priority class is its own or near it (a
confirmed turn and a speculation, never a background caption: that would hold a turn
back), up to `max_batch` — two: a batch of three took 0.60x the time but every job waits
for the last, so the mean wait gained less (0.91x against 0.87x). Each caller resolves
when its own transcript is ready, whichever job carried it.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any

from pipeline.compute.stats import EngineStats
from pipeline.compute.workers import ModelWorker, Priority
from pipeline.events import Pcm
from pipeline.listen.asr import Transcriber, TranscribesMany


@dataclass(eq=False)
class _Job:
    pcm: Pcm
    priority: Priority
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[str]
    taken: bool = field(default=False)
    vocabulary: str | None = None


class Ear:
    """Transcription for every conversation of an engine, on its one ASR worker."""

    def __init__(self, transcriber: Transcriber, worker: ModelWorker, max_batch: int = 2,
                 stats: EngineStats | None = None) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self.transcriber = transcriber
        self.worker = worker
        self._many = transcriber.transcribe_many if isinstance(transcriber, TranscribesMany) else None
        self.max_batch = max_batch if self._many is not None else 1
        self._waiting: list[_Job] = []
        self._lock = threading.Lock()
        self.stats = stats or EngineStats()
        """`asr_batches` and `asr_batched_jobs` count the batches of more than one job."""

    async def transcribe(self, pcm: Pcm, *, priority: Priority = Priority.CONFIRMED,
                         vocabulary: str | None = None) -> str:
        """`pcm`'s transcript (biased toward `vocabulary` instead of the usual words: such a
        job goes alone). Cancel-safe: a job not yet taken is dropped."""
        loop = asyncio.get_running_loop()
        job = _Job(pcm, priority, loop, loop.create_future(), vocabulary=vocabulary)
        with self._lock:
            self._waiting.append(job)
        run: asyncio.Future[Any] = asyncio.ensure_future(
            self.worker.run(self._serve, job, priority=priority))
        try:
            # A job carried by another's batch is done before its own turn on the worker.
            waits: list[asyncio.Future[Any]] = [job.future, run]
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            if not job.future.done():
                await run  # its own turn came: the result is set (or it raised)
            return await job.future
        finally:
            run.cancel()  # skipped if not started (its job went in another's batch)
            await asyncio.wait([run])
            if not run.cancelled():
                run.exception()  # seen: raised above already, or moot once the text came
            with self._lock:
                if job in self._waiting:
                    self._waiting.remove(job)

    def _serve(self, job: _Job) -> None:
        """In the worker: transcribe `job` and the jobs waiting that may join it."""
        batch = self._take(job)
        if not batch:
            return  # another job's batch carried it
        try:
            if job.vocabulary is not None:
                texts = [self.transcriber.transcribe(job.pcm, vocabulary=job.vocabulary)]
            elif len(batch) == 1:
                texts = [self.transcriber.transcribe(job.pcm)]
            else:
                assert self._many is not None
                texts = self._many([j.pcm for j in batch])
                self.stats.asr_batches += 1  # only this worker's thread writes them
                self.stats.asr_batched_jobs += len(batch)
        except Exception as error:
            for each in batch:
                each.loop.call_soon_threadsafe(_settle, each.future, None, error)
            return
        for each, text in zip(batch, texts, strict=True):
            each.loop.call_soon_threadsafe(_settle, each.future, text, None)

    def _take(self, job: _Job) -> list[_Job]:
        with self._lock:
            if job.taken:
                return []
            urgent = job.priority < Priority.BACKGROUND
            mates = [j for j in self._waiting if j is not job and not j.taken
                     and j.vocabulary is None and job.vocabulary is None
                     and (j.priority < Priority.BACKGROUND) == urgent
                     and not j.future.done()][: self.max_batch - 1]
            batch = [job, *mates]
            for each in batch:
                each.taken = True
                if each in self._waiting:
                    self._waiting.remove(each)
            return batch


def _settle(future: asyncio.Future[str], text: str | None, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(text or "")
