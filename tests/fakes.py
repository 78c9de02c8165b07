"""Scripted stand-ins for the models and the user, for unit tests (no real models).

The fakes follow the `Transcriber`, `Responder` and `Synthesizer` protocols and record
what they were asked and which thread ran them. `Mic` plays the user: it feeds the
conversation one 20 ms frame at a time and plays the speaker's output, faster than real time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence

import numpy as np

from pipeline.answer.llm import Message
from pipeline.answer.model_calls import Models
from pipeline.compute.workers import CpuLock, ModelWorker
from pipeline.conversation import Conversation
from pipeline.conversation_events import ConversationEvent
from pipeline.conversation_options import ConversationOptions, TransportNeeds
from pipeline.events import FRAME_SAMPLES, AudioFrame, Pcm, VadEvent
from pipeline.listen.endpointing import EndpointOptions
from pipeline.listen.vad import Endpointer, VadOptions
from pipeline.speaker import Speaker
from pipeline.timeline import now

VOICE = np.full(FRAME_SAMPLES, 3000, np.int16)
"""A frame the test classifier calls speech (any non-zero sample)."""
SILENCE = np.zeros(FRAME_SAMPLES, np.int16)
SAMPLES_PER_WORD = 5 * FRAME_SAMPLES
"""The fake voice speaks each word in exactly 100 ms (five frames)."""


def any_sound(pcm: Pcm) -> bool:
    """Classifier for tests: a frame with any non-zero sample is speech."""
    return bool(pcm.any())


class FakeTranscriber:
    """Returns scripted transcripts in turn (the last one repeats); an Exception is raised."""

    def __init__(self, *texts: str | Exception, delay_s: float = 0.0) -> None:
        self.texts = list(texts) or ["hello"]
        self.delay_s = delay_s
        self.calls: list[int] = []  # samples of audio per call
        self.vocabularies: list[str | None] = []  # each call's vocabulary (None: the usual)
        self.threads: list[str] = []

    def transcribe(self, pcm: Pcm, context: str = "", *, vocabulary: str | None = None) -> str:
        self.threads.append(threading.current_thread().name)
        self.vocabularies.append(vocabulary)
        self.calls.append(len(pcm))
        if self.delay_s:
            time.sleep(self.delay_s)
        text = self.texts[min(len(self.calls), len(self.texts)) - 1]
        if isinstance(text, Exception):
            raise text
        return text


class FakeResponder:
    """Streams a canned reply piece by piece, optionally slowly; records how it ended."""

    model_id = "fake-llm"
    system_prompt = "Be brief."

    def __init__(self, pieces: Sequence[str], delay_s: float = 0.0) -> None:
        self.pieces = list(pieces)
        self.delay_s = delay_s
        self.histories: list[list[Message]] = []
        self.users: list[str] = []
        self.drafts: list[str | None] = []
        self.plain: list[bool] = []
        """Each reply's `plain` (no tool call allowed)."""
        self.threads: list[str] = []
        self.prefills: list[tuple[list[Message], str]] = []
        """(history, thread name) of each `prefill` call between turns."""
        self.read_ahead: list[str] = []
        """The user's words of each `prefill` call while the user speaks."""
        self.produced = 0
        self.started = threading.Event()
        self.stopped_early = threading.Event()
        """Set when a reply generator was closed before its last piece (GeneratorExit)."""

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def reply(
        self, history: Sequence[Message], user: str, draft: str | None = None,
        plain: bool = False,
    ) -> Iterator[str]:
        self.plain.append(plain)
        self.histories.append(list(history))
        self.users.append(user)
        self.drafts.append(draft)
        self.threads.append(threading.current_thread().name)
        self.started.set()
        try:
            for piece in self.pieces:
                if self.delay_s:
                    time.sleep(self.delay_s)
                self.produced += 1
                yield piece
        except GeneratorExit:
            self.stopped_early.set()
            raise

    def warm(self, history: Sequence[Message]) -> None:
        pass

    def prefill(self, history: Sequence[Message], user_start: str = "") -> None:
        if user_start:
            self.read_ahead.append(user_start)
        else:
            self.prefills.append((list(history), threading.current_thread().name))


class FakeSynthesizer:
    """Speaks every word as 100 ms of a constant non-zero tone, one chunk per word."""

    voice_id = "fake-voice"

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.texts: list[str] = []  # clauses asked for
        self.finished: list[str] = []  # clauses fully synthesized
        self.threads: list[str] = []

    def synthesize(self, text: str) -> Iterator[Pcm]:
        self.texts.append(text)
        self.threads.append(threading.current_thread().name)
        for _ in text.split():
            if self.delay_s:
                time.sleep(self.delay_s)
            yield np.full(SAMPLES_PER_WORD, 1000, np.int16)
        self.finished.append(text)


class FakeDetector:
    """Scores transcripts from a table (log P(turn over)); unknown text raises."""

    def __init__(self, verdicts: dict[str, float], delay_s: float = 0.0) -> None:
        self.verdicts = verdicts
        self.delay_s = delay_s
        self.asked: list[str] = []
        self.threads: list[str] = []
        self.read_ahead: list[str] = []

    def done_logprob(self, text: str) -> float:
        self.asked.append(text)
        self.threads.append(threading.current_thread().name)
        if self.delay_s:
            time.sleep(self.delay_s)
        return self.verdicts[text]

    def prefill(self, text: str) -> None:
        self.read_ahead.append(text)


class Workers:
    """Creates model workers and closes every one of them at the end of a test."""

    def __init__(self) -> None:
        self.all: list[ModelWorker] = []

    def __call__(self, name: str, cpu: CpuLock | None = None) -> ModelWorker:
        worker = ModelWorker(name, cpu)
        self.all.append(worker)
        return worker

    def models(
        self,
        transcriber: FakeTranscriber,
        responder: FakeResponder,
        synthesizer: FakeSynthesizer,
        detector: FakeDetector | None = None,
        cpu: CpuLock | None = None,
        light: FakeResponder | None = None,
    ) -> Models:
        """`cpu`: the workers take turns on it, as the product's do (None: they don't).
        `light`: the light tier's responder (None: no light tier)."""
        return Models(transcriber, self("asr", cpu), responder, self("llm", cpu), synthesizer,
                      self("tts", cpu), detector, self("turn", cpu) if detector is not None else None,
                      light_responder=light,
                      light_worker=self("llm-light") if light is not None else None)

    def close(self) -> None:
        for worker in self.all:
            worker.close()


TEST_VAD = VadOptions(
    start_ms=40, start_window_ms=60, pre_roll_ms=60, onset_ms=60, endpoint_ms=200, resume_ms=40
)
"""Short timings: speech starts on 2 voiced frames, onset after 3 silent, endpoint after 10."""
ONSET_FRAMES = TEST_VAD.onset_ms // 20
ENDPOINT_FRAMES = TEST_VAD.endpoint_ms // 20


def conversation(
    models: Models,
    speaker: Speaker,
    *,
    speculate: bool = True,
    barge_in_ms: int = 200,
    hold_ms: int | None = None,
    held_barge_in_ms: int | None = 800,
    endpoint: EndpointOptions | None = None,
    partial_interval_s: float | None = None,
    prefill_captions: bool = True,
    early_verdict: bool = True,
    on_vad: Callable[[list[VadEvent]], None] | None = None,
    spoken: bool = True,
) -> tuple[Conversation, list[ConversationEvent]]:
    """A conversation whose endpointer calls any non-zero frame speech, and its events.

    Adaptive endpointing, holding a reply talked over and live captions are off unless
    asked for, so the scripted transcripts are only consumed by replies."""
    events: list[ConversationEvent] = []
    options = ConversationOptions(vad=TEST_VAD, speculate=speculate, barge_in_ms=barge_in_ms,
                                  hold_ms=hold_ms, held_barge_in_ms=held_barge_in_ms,
                                  endpoint=endpoint, partial_interval_s=partial_interval_s,
                                  prefill_captions=prefill_captions, early_verdict=early_verdict)
    needs = TransportNeeds(on_vad=on_vad, classify=any_sound, spoken=spoken)
    conv = Conversation(models, speaker, options, emit=events.append, needs=needs)
    return conv, events


async def until(condition: Callable[[], bool], timeout: float = 3.0, what: str = "") -> None:
    """Wait (on the loop) until `condition()` holds; fail the test after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await asyncio.sleep(0.002)


async def play_out(speaker: Speaker, task: asyncio.Task[None]) -> int:
    """Pop the speaker until the reply's task ends; returns the frames popped."""
    popped = 0
    while not task.done():
        if speaker.pop() is not None:
            popped += 1
        await asyncio.sleep(0.001)
    await task
    return popped


class Mic:
    """The user's side of a conversation run by `Conversation.run`.

    `send` returns only once the conversation has handled the frame, so a test can assert
    on the state right after any frame. `play` pops the speaker like a transport would.
    """

    def __init__(self, conv: Conversation) -> None:
        self.conv = conv
        self._queue: asyncio.Queue[AudioFrame | None] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        """The task running `Conversation.run`, from entering the `async with`."""
        self.played_samples = 0  # samples popped from the speaker (padding included)

    async def __aenter__(self) -> Mic:
        self.task = asyncio.create_task(self.conv.run(self._frames()))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.end()

    async def end(self) -> None:
        """The user's audio ends; waits for `Conversation.run` to return."""
        if self.task is None:
            return
        task, self.task = self.task, None
        if not task.done():
            await self._queue.put(None)
        await asyncio.wait_for(task, 5)

    async def _frames(self) -> AsyncIterator[AudioFrame]:
        while (frame := await self._queue.get()) is not None:
            yield frame
            self._queue.task_done()  # reached when the conversation asks for the next one
        self._queue.task_done()

    async def send(self, voiced: bool, count: int = 1, *, play: bool = False) -> None:
        """Send `count` frames of speech or silence; with `play`, pop a frame after each."""
        for _ in range(count):
            await self._queue.put(AudioFrame((VOICE if voiced else SILENCE).copy(), now()))
            await asyncio.wait_for(self._queue.join(), 5)
            if play:
                self.play(1)
            await asyncio.sleep(0.001)

    async def say(self, voiced_frames: int = 10) -> None:
        """A whole user turn: speech, then silence up to the endpoint."""
        await self.send(True, voiced_frames)
        await self.send(False, ENDPOINT_FRAMES)

    def play(self, count: int) -> int:
        """Pop up to `count` frames from the speaker; returns how many there were."""
        popped = 0
        for _ in range(count):
            if self.conv.speaker.pop() is None:
                break
            popped += 1
            self.played_samples += FRAME_SAMPLES
        return popped

    async def play_until(self, condition: Callable[[], bool], timeout: float = 3.0) -> None:
        """Play the speaker's output, a frame per loop turn, until `condition()` holds."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out playing until {condition}")
            self.play(1)
            await asyncio.sleep(0.001)


class DoubtfulGate(Endpointer):
    """An endpointer whose room gate doubts the voice while `doubt` is set: it keeps a
    turn going but neither starts nor resumes one (a soft last word under the room)."""

    doubt = False

    def push(self, frame: AudioFrame) -> list[VadEvent]:
        voiced = bool(frame.pcm.any())
        sure = voiced and not self.doubt
        return self.advance(frame, voiced, confirmed=sure, resumes=sure)

    async def soft_word_after_onset(self, mic: Mic, started: threading.Event,
                                    frames: int = 4,
                                    then: Callable[[], object] = lambda: None) -> None:
        """A question, its silence onset (the speculation starts: `started`; `then` is
        called), then `frames` of voice this gate doubts: it keeps the pause going and
        resumes nothing."""
        await mic.send(True, 10)
        await mic.send(False, ONSET_FRAMES)
        await until(started.is_set)
        then()
        self.doubt = True
        await mic.send(True, frames)
        self.doubt = False
