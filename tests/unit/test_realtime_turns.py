"""What transports ask of a Conversation beyond the microphone (TransportNeeds, start_turn, interrupt):
a turn given as audio or text, a client's interruption, the endpointer's events seen —
each on the Conversation's own reply path."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator

import numpy as np
import pytest

from pipeline.answer.model_calls import Models
from pipeline.compute.workers import ModelWorker
from pipeline.conversation_events import BargeIn, Transcript
from pipeline.events import Endpoint, SilenceOnset, SpeechStarted, VadEvent
from pipeline.speaker import Speaker
from pipeline.timeline import ENDPOINT
from tests.fakes import (
    FakeResponder,
    FakeSynthesizer,
    FakeTranscriber,
    Mic,
    Workers,
    conversation,
    until,
)

pytestmark = pytest.mark.timeout(10)


async def test_a_text_turn_skips_asr_and_enters_the_history(workers: Workers) -> None:
    transcriber, responder = FakeTranscriber("never"), FakeResponder(["Four."])
    conv, events = conversation(workers.models(transcriber, responder, FakeSynthesizer()),
                                Speaker())
    async with Mic(conv) as mic:
        await asyncio.sleep(0.01)  # (the conversation starts running)
        assert conv.start_turn(text="Two plus two?")
        assert not conv.start_turn(text="again")  # one reply at a time
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert transcriber.calls == [] and responder.users == ["Two plus two?"]
    assert [(m.role, m.content) for m in conv.history] == [("user", "Two plus two?"),
                                                           ("assistant", "Four.")]
    assert conv.turns[0].timeline.has(ENDPOINT)
    assert Transcript("Two plus two?", final=True) in events


async def test_an_audio_turn_is_transcribed_as_usual(workers: Workers) -> None:
    transcriber = FakeTranscriber("Hello.")
    conv, _ = conversation(workers.models(transcriber, FakeResponder(["Hi."]), FakeSynthesizer()),
                           Speaker())
    audio = np.full(7 * 320, 1000, np.int16)
    async with Mic(conv) as mic:
        await asyncio.sleep(0.01)
        assert conv.start_turn(audio=audio)
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert transcriber.calls == [len(audio)]


async def test_start_turn_needs_a_running_conversation(workers: Workers) -> None:
    conv, _ = conversation(workers.models(FakeTranscriber(), FakeResponder(["x"]),
                                          FakeSynthesizer()), Speaker())
    assert not conv.start_turn(text="hello")


async def test_interrupt_stops_the_reply_and_keeps_what_was_heard(workers: Workers) -> None:
    words = [f"w{i} " for i in range(20)]
    conv, events = conversation(workers.models(FakeTranscriber("Talk."), FakeResponder(words),
                                               FakeSynthesizer()), Speaker())
    async with Mic(conv) as mic:
        await asyncio.sleep(0.01)
        assert conv.start_turn(text="Talk.")
        await until(lambda: conv.speaker.queued_frames == 100)  # all 20 words made
        mic.play(10)  # 200 ms heard: two words of the fake voice
        assert conv.interrupt(reason="client_cancelled")
        assert conv.speaker.queued_frames == 0 and not conv.busy
        assert not conv.interrupt()  # nothing left to interrupt
    (turn,) = conv.turns
    # What was heard: the played share of the clause, a prefix of the reply.
    heard = turn.heard.split()
    assert turn.interrupted and len(heard) == 2 and turn.reply.split()[: len(heard)] == heard
    assert conv.history[-1].interrupted
    assert any(isinstance(e, BargeIn) and e.reason == "client_cancelled" for e in events)


async def test_a_speculative_reply_is_not_the_clients_to_cancel(workers: Workers) -> None:
    conv, _ = conversation(workers.models(FakeTranscriber("Hi."), FakeResponder(["Yo."]),
                                          FakeSynthesizer()), Speaker())
    async with Mic(conv) as mic:
        await mic.send(True, 10)
        await mic.send(False, 4)  # past the onset: a speculation runs, the turn goes on
        assert conv.busy
        assert not conv.interrupt()


async def test_the_vad_observer_is_told_events_before_the_conversation_acts(workers: Workers) -> None:
    seen: list[tuple[type[VadEvent], bool]] = []

    def on_events(events: list[VadEvent]) -> None:
        seen.extend((type(e), conv.busy) for e in events)

    conv, _ = conversation(workers.models(FakeTranscriber("Hi."), FakeResponder(["Yo."]),
                                          FakeSynthesizer()), Speaker(), on_vad=on_events)
    async with Mic(conv) as mic:
        await mic.say()
    kinds = [kind for kind, _ in seen]
    assert kinds == [SpeechStarted, SilenceOnset, Endpoint]
    assert seen[1][1] is False  # told of the onset before the speculation started


async def test_text_only_makes_no_audio(workers: Workers) -> None:
    synthesizer = FakeSynthesizer()
    conv, _ = conversation(workers.models(FakeTranscriber(), FakeResponder(["Fine, thanks."]),
                                          synthesizer), Speaker(), spoken=False)
    async with Mic(conv):
        await asyncio.sleep(0.01)
        assert conv.start_turn(text="How are you?")
        await until(lambda: len(conv.turns) == 1)
    assert conv.turns[0].reply == "Fine, thanks." and synthesizer.texts == []
    assert conv.speaker.queued_frames == 0


@contextlib.asynccontextmanager
async def blocked(worker: ModelWorker) -> AsyncIterator[asyncio.Future[bool]]:
    """`worker` busy with a job that runs until the block ends (a long transcription:
    another user's turn, a caption)."""
    release = threading.Event()
    job = asyncio.ensure_future(worker.run(release.wait, 10.0))
    await asyncio.sleep(0.02)  # (the job is running in the worker's thread)
    try:
        yield job
    finally:
        release.set()
        await job


async def test_a_typed_turn_completes_while_the_asr_worker_is_blocked(workers: Workers) -> None:
    """Typed words are the transcript: no job goes to the ASR worker, so the turn is not
    queued behind a transcription in progress."""
    transcriber, responder = FakeTranscriber("never"), FakeResponder(["Four."])
    models = workers.models(transcriber, responder, FakeSynthesizer())
    conv, _ = conversation(models, Speaker())
    async with blocked(models.asr_worker) as job, Mic(conv) as mic:
        await asyncio.sleep(0.01)
        assert conv.start_turn(text="Two plus two?")
        await mic.play_until(lambda: len(conv.turns) == 1, timeout=2.0)
        assert not job.done(), "the ASR worker was blocked all along"
    assert conv.turns[0].reply == "Four." and transcriber.calls == []


async def test_a_text_only_reply_queues_nothing_on_the_tts_worker(workers: Workers) -> None:
    """Text only means no speech made at all: not silent audio, not a TTS job — a reply
    whose TTS worker is blocked still completes, and the synthesizer is never called."""
    synthesizer = FakeSynthesizer()
    models: Models = workers.models(FakeTranscriber(), FakeResponder(["Fine, ", "thanks."]),
                                    synthesizer)
    conv, _ = conversation(models, Speaker(), spoken=False)
    async with blocked(models.tts_worker) as job, Mic(conv):
        await asyncio.sleep(0.01)
        assert conv.start_turn(text="How are you?")
        await until(lambda: len(conv.turns) == 1, timeout=2.0)
        assert not job.done()
    (turn,) = conv.turns
    assert (turn.reply, turn.heard, turn.interrupted) == ("Fine, thanks.", "Fine, thanks.", False)
    assert synthesizer.texts == [] and conv.speaker.queued_frames == 0
    assert [m.content for m in conv.history] == ["How are you?", "Fine, thanks."]


async def test_replies_are_spoken_again_once_asked(workers: Workers) -> None:
    synthesizer = FakeSynthesizer()
    conv, _ = conversation(workers.models(FakeTranscriber(), FakeResponder(["Yes."]),
                                          synthesizer), Speaker())
    conv.speak_replies(False)
    conv.speak_replies(True)
    async with Mic(conv) as mic:
        await asyncio.sleep(0.01)
        assert conv.start_turn(text="Still there?")
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert synthesizer.texts == ["Yes."]


async def test_a_truncated_reply_keeps_only_its_heard_share_in_the_history(workers: Workers) -> None:
    """Realtime's conversation.item.truncate, through Conversation.truncate_last_reply: the
    last assistant message becomes the played share of its words, marked interrupted (so
    the LLM reads it as cut), and a share of 1 leaves it whole."""
    conv, _ = conversation(workers.models(FakeTranscriber(), FakeResponder(["One two three four."]),
                                          FakeSynthesizer()), Speaker())
    async with Mic(conv) as mic:
        await asyncio.sleep(0.01)
        assert conv.start_turn(text="Count to four.")
        await mic.play_until(lambda: len(conv.turns) == 1)
    conv.truncate_last_reply("One two three four.", 1.0)
    assert conv.history[-1].content == "One two three four." and not conv.history[-1].interrupted
    conv.truncate_last_reply("One two three four.", 0.5)
    assert [(m.role, m.content, m.interrupted) for m in conv.history] == [
        ("user", "Count to four.", False), ("assistant", "One two", True)]
