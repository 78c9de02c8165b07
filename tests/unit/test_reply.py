"""Reply: transcript → LLM → clauses → TTS → speaker, with scripted fake models."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import numpy as np
import pytest

from pipeline.answer.clauses import ClauseOptions
from pipeline.answer.heard import WORD_S, Spoken, heard_words
from pipeline.answer.llm import Message
from pipeline.answer.reply import Reply
from pipeline.conversation_events import ConversationEvent, ReplyDelta, Transcript
from pipeline.events import FRAME_SAMPLES, SAMPLE_RATE, Clause, Pcm
from pipeline.speaker import Speaker
from pipeline.timeline import SPEECH_END, TTFA_SERVER, Timeline, now
from tests.fakes import (
    SAMPLES_PER_WORD,
    FakeResponder,
    FakeSynthesizer,
    FakeTranscriber,
    Workers,
    play_out,
    until,
)

pytestmark = pytest.mark.timeout(10)

FRAMES_PER_WORD = SAMPLES_PER_WORD // FRAME_SAMPLES


def make_reply(
    workers: Workers,
    responder: FakeResponder,
    *,
    transcriber: FakeTranscriber | None = None,
    synthesizer: FakeSynthesizer | None = None,
    speculative: bool = False,
    history: list[Message] | None = None,
    clause_options: ClauseOptions | None = None,
) -> tuple[Reply, Speaker, list[tuple[str, dict[str, object]]]]:
    models = workers.models(
        transcriber or FakeTranscriber("how are you"), responder, synthesizer or FakeSynthesizer()
    )
    speaker = Speaker()
    events: list[ConversationEvent] = []
    timeline = Timeline()
    timeline.stamp(SPEECH_END, now())
    reply = Reply(models, speaker, history or [], np.zeros(16_000, np.int16), timeline,
                  events.append, speculative=speculative, clause_options=clause_options)
    if not speculative:
        reply.commit()
    return reply, speaker, events


async def test_a_reply_speaks_every_word_and_returns_once_it_has_played(workers: Workers) -> None:
    responder = FakeResponder(["I am ", "fine, ", "thanks. ", "And you?"])
    reply, speaker, _ = make_reply(workers, responder)
    task = asyncio.create_task(reply.run())
    await until(lambda: speaker.queued_frames > 0)
    assert not task.done()  # audio is queued but not yet played
    popped = await play_out(speaker, task)
    assert popped == 6 * FRAMES_PER_WORD  # six words, 100 ms each
    assert reply.transcript == "how are you"
    assert reply.text == "I am fine, thanks. And you?"
    assert reply.played_text == "I am fine, thanks. And you?"
    assert reply.played_s == pytest.approx(0.6)


async def test_a_reply_passes_history_and_transcript_to_the_llm(workers: Workers) -> None:
    responder = FakeResponder(["Sure."])
    history = [Message("user", "hi"), Message("assistant", "hello")]
    reply, speaker, _ = make_reply(workers, responder, history=history)
    await play_out(speaker, asyncio.create_task(reply.run()))
    assert responder.histories == [history]
    assert responder.users == ["how are you"]


async def test_each_model_runs_in_its_own_worker_thread(workers: Workers) -> None:
    transcriber, responder = FakeTranscriber("hi"), FakeResponder(["Ok."])
    synthesizer = FakeSynthesizer()
    reply, speaker, _ = make_reply(
        workers, responder, transcriber=transcriber, synthesizer=synthesizer
    )
    await play_out(speaker, asyncio.create_task(reply.run()))
    assert (transcriber.threads, responder.threads, synthesizer.threads) == (
        ["apace-asr"], ["apace-llm"], ["apace-tts"]
    )


async def test_a_reply_emits_the_transcript_and_each_text_delta(workers: Workers) -> None:
    reply, speaker, events = make_reply(workers, FakeResponder(["Fine", " thanks."]))
    await play_out(speaker, asyncio.create_task(reply.run()))
    assert events == [
        Transcript("how are you", final=True),
        ReplyDelta("Fine"),
        ReplyDelta(" thanks."),
    ]
    assert reply.tokens == 2


async def test_an_empty_transcript_ends_the_reply_without_calling_the_llm(workers: Workers) -> None:
    responder = FakeResponder(["never"])
    reply, speaker, events = make_reply(workers, responder, transcriber=FakeTranscriber(""))
    await asyncio.wait_for(reply.run(), 2)
    assert responder.users == []
    assert events == []
    assert speaker.queued_frames == 0


async def test_a_speculative_reply_queues_no_audio_until_it_is_committed(workers: Workers) -> None:
    synthesizer = FakeSynthesizer()
    reply, speaker, _ = make_reply(
        workers, FakeResponder(["One two three."]), synthesizer=synthesizer, speculative=True
    )
    task = asyncio.create_task(reply.run())
    await until(lambda: synthesizer.finished == ["One two three."])  # audio is ready
    await asyncio.sleep(0.05)
    assert speaker.queued_frames == 0
    assert not reply.committed.is_set()
    reply.commit()
    await until(lambda: speaker.queued_frames == 3 * FRAMES_PER_WORD)
    await play_out(speaker, task)


async def test_the_llm_keeps_streaming_while_the_first_clause_is_synthesized(
    workers: Workers,
) -> None:
    """Clause 1 reaches TTS before the LLM has finished the reply."""
    responder = FakeResponder(["Well, ", "let me see, ", "it is ", "about ", "noon. ", "Bye."],
                              delay_s=0.03)
    synthesizer = FakeSynthesizer()
    reply, speaker, _ = make_reply(workers, responder, synthesizer=synthesizer)
    task = asyncio.create_task(reply.run())
    await until(lambda: len(synthesizer.texts) >= 1)
    assert responder.produced < len(responder.pieces)
    await play_out(speaker, task)
    assert synthesizer.texts == ["Well, let me see,", "it is about noon.", "Bye."]


async def test_played_text_is_the_whole_clauses_heard_and_the_heard_share_of_the_next(
    workers: Workers,
) -> None:
    reply, speaker, _ = make_reply(workers, FakeResponder(["One two. ", "Three four five six."]))
    task = asyncio.create_task(reply.run())
    await until(lambda: speaker.queued_frames == 6 * FRAMES_PER_WORD)
    for _ in range(4 * FRAMES_PER_WORD + 2):  # "One two" and "Three four", plus 40 ms
        speaker.pop()
    assert reply.played_text == "One two. Three four"
    assert reply.played_s == pytest.approx(0.44)
    await play_out(speaker, task)


async def test_played_text_is_empty_before_anything_plays(workers: Workers) -> None:
    reply, speaker, _ = make_reply(workers, FakeResponder(["One two."]))
    task = asyncio.create_task(reply.run())
    await until(lambda: speaker.queued_frames > 0)
    assert reply.played_text == ""
    await play_out(speaker, task)


async def test_cancelling_a_reply_stops_the_llm_generator(workers: Workers) -> None:
    responder = FakeResponder(["word "] * 100, delay_s=0.01)
    reply, _, _ = make_reply(workers, responder)
    task = asyncio.create_task(reply.run())
    await until(lambda: responder.produced >= 3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(responder.stopped_early.wait, 2)
    assert responder.produced < 100


async def test_the_first_audio_stamp_is_when_the_first_frame_leaves(workers: Workers) -> None:
    reply, speaker, _ = make_reply(workers, FakeResponder(["Hi there."]))
    task = asyncio.create_task(reply.run())
    await until(lambda: speaker.queued_frames > 0)
    await asyncio.sleep(0.02)
    assert not reply.timeline.has(TTFA_SERVER)
    before = now()
    speaker.pop()
    assert reply.timeline.stamps[TTFA_SERVER] >= before
    await play_out(speaker, task)


class SlowFirstChunk(FakeSynthesizer):
    """300 ms before the very first chunk, then instant."""

    calls = 0

    def synthesize(self, text: str) -> Iterator[Pcm]:
        self.calls += 1
        if self.calls == 1:
            time.sleep(0.3)
        return super().synthesize(text)


async def test_the_llm_waits_while_the_first_clause_is_synthesized(workers: Workers) -> None:
    """First audio first: between the first clause and its first audio chunk the LLM
    takes no further piece, so Piper has the CPU; afterwards it streams on."""
    responder = FakeResponder(["Well ", "let ", "me ", "see, ", *["word "] * 20, "done."],
                              delay_s=0.02)
    synthesizer = SlowFirstChunk()
    reply, speaker, _ = make_reply(workers, responder, synthesizer=synthesizer)
    task = asyncio.create_task(reply.run())
    await until(lambda: synthesizer.calls >= 1, what="clause 1 at the TTS")
    await asyncio.sleep(0.2)  # ten pieces' worth of LLM time, TTS still busy
    assert responder.produced <= 6  # clause 1 and the pieces already in flight
    await play_out(speaker, task)
    assert responder.produced == len(responder.pieces)


async def test_no_piece_after_the_first_clause_is_begun_before_its_audio(
    workers: Workers,
) -> None:
    """Lockstep (ClauseOptions.lockstep): the LLM is never a piece ahead of the reply
    before clause 1, so the piece after it (~55 ms of the CPU on 2 cores) is not being
    made while clause 1's first audio is; free-running, it is already under way."""
    for lockstep, least in ((True, 4), (False, 5)):
        responder = FakeResponder(["Well ", "let ", "me ", "see, ", "it ", "is ", "noon."],
                                  delay_s=0.02)
        synthesizer = SlowFirstChunk()
        reply, speaker, _ = make_reply(workers, responder, synthesizer=synthesizer,
                                       clause_options=ClauseOptions(lockstep=lockstep))
        task = asyncio.create_task(reply.run())
        await until(lambda s=synthesizer: s.calls >= 1, what="clause 1 at the TTS")
        await asyncio.sleep(0.1)
        # In lockstep exactly clause 1's pieces; free-running, one more at least (a slow
        # event loop lets it make more before the gate closes).
        assert responder.produced == least if lockstep else responder.produced >= least
        await play_out(speaker, task)
        assert responder.produced == len(responder.pieces)


def _spoken(text: str, seconds: float, played_s: float, done: bool) -> Spoken:
    return Spoken(Clause(text, 0, True), int(seconds * SAMPLE_RATE),
                  int(played_s * SAMPLE_RATE), done)


def test_a_clause_still_being_made_is_heard_at_the_pace_of_the_finished_ones() -> None:
    first = _spoken("One two three four.", 1.6, 1.6, True)  # 0.4 s a word
    # 8 words, 1.2 s of the start made, 0.8 s played: as if the whole clause it would be 5
    # words; at this reply's pace it is 2.
    making = _spoken("Five six seven eight nine ten eleven twelve.", 1.2, 0.8, False)
    assert heard_words([first, making]) == "One two three four. Five six".split()
    # Made whole, the same clause is heard in proportion.
    made = _spoken("Five six seven eight nine ten eleven twelve.", 3.2, 0.8, True)
    assert heard_words([first, made]) == "One two three four. Five six".split()


def test_with_no_finished_clause_the_pace_is_a_normal_voices() -> None:
    played = 3 * WORD_S + 0.01
    # 10 words, 2 s of them made: as if whole, 5 words played; at a normal pace, 3.
    assert heard_words([_spoken("a b c d e f g h i j", 2.0, played, False)]) == ["a", "b", "c"]
    # A slow voice: 4 s made is already more than the pace says, so the share decides.
    assert heard_words([_spoken("a b c d e f g h i j", 4.0, played, False)]) == ["a", "b"]


class PromotedResponder(FakeResponder):
    promoted = 0

    def promote(self) -> None:
        self.promoted += 1


async def test_commit_tells_a_shared_llm_the_reply_is_now_a_confirmed_turns(
        workers: Workers) -> None:
    responder = PromotedResponder(["Fine."])
    reply, speaker, _ = make_reply(workers, responder, speculative=True)
    task = asyncio.create_task(reply.run())
    assert responder.promoted == 0
    reply.commit()
    assert responder.promoted == 1
    await play_out(speaker, task)
