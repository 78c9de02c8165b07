"""Conversation: speculation, commit, resume, barge-in and history, with scripted models.

Frames go in through `Mic` one at a time, each handled before the next; the speaker is
popped by the test to stand in for playback. The endpointer uses TEST_VAD: speech starts on
2 voiced frames, the onset comes after 3 silent frames and the endpoint after 10.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from pipeline.answer.llm import Message
from pipeline.compute.workers import Priority
from pipeline.conversation_events import BargeIn, Error, Turn, UserSpeaking, to_wire
from pipeline.events import FRAME_SAMPLES, Pcm
from pipeline.listen.asr import TALK_OVER_VOCABULARY
from pipeline.speaker import Speaker
from pipeline.timeline import (
    ASR_FINAL,
    ENDPOINT,
    FIRST_CLAUSE,
    SPEECH_END,
    TTFA_SERVER,
    TTFT,
)
from pipeline.turn.talk_over import is_backchannel, repeats_reply
from tests.fakes import (
    ENDPOINT_FRAMES,
    ONSET_FRAMES,
    SAMPLES_PER_WORD,
    TEST_VAD,
    DoubtfulGate,
    FakeResponder,
    FakeSynthesizer,
    FakeTranscriber,
    Mic,
    Workers,
    any_sound,
    conversation,
    until,
)

pytestmark = pytest.mark.timeout(10)

REPLY = ["One two three four five, ", "six seven eight nine ten. ", "Eleven twelve."]
REPLY_TEXT = "".join(REPLY).strip()
REPLY_FRAMES = 12 * SAMPLES_PER_WORD // FRAME_SAMPLES


async def test_speculation_prepares_the_reply_at_onset_but_plays_it_only_at_the_endpoint(
    workers: Workers,
) -> None:
    synthesizer = FakeSynthesizer()
    models = workers.models(FakeTranscriber("hello"), FakeResponder(REPLY), synthesizer)
    conv, _ = conversation(models, Speaker())
    async with Mic(conv) as mic:
        await mic.send(True, 10)
        await mic.send(False, ONSET_FRAMES)
        assert conv.speculation.started == 1
        await until(lambda: len(synthesizer.finished) >= 1, what="the first clause synthesized")
        await asyncio.sleep(0.05)
        assert conv.speaker.queued_frames == 0  # ready, but the user may not be done
        await mic.send(False, ENDPOINT_FRAMES - ONSET_FRAMES)
        await until(lambda: conv.speaker.queued_frames > 0, what="audio queued")
        assert conv.speculation.committed == 1
        assert synthesizer.texts[0] == "One two three four five,"


async def test_speech_resumed_after_onset_cancels_the_speculative_reply(workers: Workers) -> None:
    responder = FakeResponder(["word "] * 100, delay_s=0.01)
    models = workers.models(FakeTranscriber("hello"), responder, FakeSynthesizer())
    conv, _ = conversation(models, Speaker())
    async with Mic(conv) as mic:
        await mic.send(True, 10)
        await mic.send(False, ONSET_FRAMES)
        await until(lambda: responder.produced >= 2, what="the LLM streaming")
        await mic.send(True, 2)  # 40 ms of voice: the user goes on talking
        assert conv.speculation.cancelled == 1
        assert not conv.busy
        assert await asyncio.to_thread(responder.stopped_early.wait, 2)
        assert responder.produced < 100
        assert conv.speaker.queued_frames == 0
        assert conv.history == []


async def test_a_cancelled_speculation_is_replaced_by_one_on_the_full_utterance(
    workers: Workers,
) -> None:
    transcriber = FakeTranscriber("hello", "hello there")
    responder = FakeResponder(["Hi."], delay_s=0.05)
    conv, _ = conversation(workers.models(transcriber, responder, FakeSynthesizer()), Speaker())
    async with Mic(conv) as mic:
        await mic.send(True, 10)
        await mic.send(False, ONSET_FRAMES)
        await until(lambda: responder.started.is_set())
        await mic.send(True, 5)
        await mic.send(False, ENDPOINT_FRAMES)
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert (conv.speculation.started, conv.speculation.cancelled) == (2, 1)
    assert conv.speculation.committed == 1
    assert transcriber.calls[1] > transcriber.calls[0]  # the second saw more audio
    assert conv.history[0] == Message("user", "hello there")


async def test_without_speculation_nothing_starts_before_the_endpoint(workers: Workers) -> None:
    transcriber = FakeTranscriber("hello")
    models = workers.models(transcriber, FakeResponder(["Hi."]), FakeSynthesizer())
    conv, _ = conversation(models, Speaker(), speculate=False)
    async with Mic(conv) as mic:
        await mic.send(True, 10)
        await mic.send(False, ENDPOINT_FRAMES - 1)
        await asyncio.sleep(0.05)
        assert transcriber.calls == []
        await mic.send(False, 1)
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert conv.speculation.started == 0
    assert conv.history == [Message("user", "hello"), Message("assistant", "Hi.")]


async def test_sustained_speech_while_the_assistant_talks_barges_in(workers: Workers) -> None:
    models = workers.models(FakeTranscriber("tell me"), FakeResponder(REPLY), FakeSynthesizer())
    conv, events = conversation(models, Speaker(), barge_in_ms=200)
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: conv.speaker.queued_frames == REPLY_FRAMES, what="reply audio")
        mic.play(12)
        await mic.send(True, 9, play=True)  # 180 ms of voice: not yet
        assert conv.barge_ins == 0
        assert conv.speaker.queued_frames > 0
        await mic.send(True, 1, play=True)  # 200 ms: barge-in
        assert conv.barge_ins == 1
        assert conv.speaker.queued_frames == 0
        await asyncio.sleep(0.05)
        assert conv.speaker.queued_frames == 0  # the cancelled reply queues nothing more
    heard_words = mic.played_samples // SAMPLES_PER_WORD
    assert 0 < heard_words < 12
    expected = " ".join(REPLY_TEXT.split()[:heard_words])
    assert conv.history == [Message("user", "tell me"),
                            Message("assistant", expected, interrupted=True)]
    (turn,) = conv.turns
    assert turn.interrupted
    assert turn.heard == expected
    assert REPLY_TEXT.startswith(turn.heard)
    played_frames = mic.played_samples // FRAME_SAMPLES
    assert [e for e in events if isinstance(e, BargeIn)] == [
        BargeIn(dropped_ms=20 * (REPLY_FRAMES - played_frames), reason="speech")
    ]


async def test_a_short_blip_while_the_assistant_talks_does_not_interrupt(workers: Workers) -> None:
    transcriber = FakeTranscriber("tell me")
    models = workers.models(transcriber, FakeResponder(REPLY), FakeSynthesizer())
    conv, _ = conversation(models, Speaker(), barge_in_ms=200)
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: conv.speaker.queued_frames >= 10, what="reply audio")
        mic.play(5)
        await mic.send(True, 4, play=True)  # an 80 ms cough
        await mic.send(False, ENDPOINT_FRAMES, play=True)  # its own onset and endpoint pass
        assert conv.barge_ins == 0
        assert conv.busy
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert mic.played_samples >= REPLY_FRAMES * FRAME_SAMPLES
    assert len(transcriber.calls) == 1  # the cough did not become a turn
    assert conv.history == [Message("user", "tell me"), Message("assistant", REPLY_TEXT)]
    assert not conv.turns[0].interrupted


async def test_speech_over_a_reply_holds_it_at_once_and_a_cough_lets_it_go_on(
    workers: Workers,
) -> None:
    """The hold lasts while the held turn goes on and its words are heard: a cough (Whisper
    hears no speech in it) lets the reply go on from where it stopped."""
    transcriber = FakeTranscriber("tell me", "")
    models = workers.models(transcriber, FakeResponder(REPLY), FakeSynthesizer())
    conv, events = conversation(models, Speaker(), barge_in_ms=200, hold_ms=120)
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: conv.speaker.queued_frames == REPLY_FRAMES, what="reply audio")
        mic.play(5)
        await mic.send(True, 5, play=True)  # 100 ms of voice: the reply plays on
        assert not conv.speaker.held
        assert mic.played_samples == 10 * FRAME_SAMPLES
        await mic.send(True, 2, play=True)  # 120 ms: held, nothing more leaves
        assert conv.speaker.held
        assert mic.played_samples == 10 * FRAME_SAMPLES
        assert conv.speaker.queued_frames == REPLY_FRAMES - 10  # kept, not dropped
        await mic.send(False, ENDPOINT_FRAMES - 1, play=True)  # a pause: not yet its end
        assert conv.speaker.held and mic.played_samples == 10 * FRAME_SAMPLES
        await mic.send(False, 1, play=True)  # it ended: no words in it
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert mic.played_samples >= REPLY_FRAMES * FRAME_SAMPLES
    assert conv.barge_ins == 0 and not any(isinstance(e, BargeIn) for e in events)
    assert conv.history == [Message("user", "tell me"), Message("assistant", REPLY_TEXT)]
    assert len(transcriber.calls) == 2  # the cough was heard, and was no turn
    assert (conv.stats.holds, conv.stats.holds_released) == (1, 1)


@pytest.mark.parametrize("said, stops", [("Wait.", True), ("Mm-hm.", False),
                                         ("Yeah, okay.", False), ("Yeah, but why?", True)])
@pytest.mark.parametrize("min_turn_ms", [0, 200], ids=["a-turn", "too-short-for-a-turn"])
async def test_a_short_word_over_a_reply_stops_it_unless_it_says_go_on(
    workers: Workers, said: str, stops: bool, min_turn_ms: int,
) -> None:
    """A word confirmed for less than barge_in_ms ("Wait.": 140-180 ms over a real reply)
    holds the reply; once it has ended, its words decide: a listener's backchannel lets the
    reply go on, anything else interrupts it and is answered. Also where it had too little
    confirmed speech to be a turn of its own (a room gate's min_turn_ms)."""
    transcriber = FakeTranscriber("tell me", said)
    models = workers.models(transcriber, FakeResponder(REPLY), FakeSynthesizer())
    conv, events = conversation(models, Speaker(), barge_in_ms=200, hold_ms=120)
    conv.endpointer._min_turn_ms = min_turn_ms  # as a room gate sets it
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: conv.speaker.queued_frames == REPLY_FRAMES, what="reply audio")
        mic.play(5)
        await mic.send(True, 7, play=True)  # held at 120 ms, short of a barge-in
        assert conv.speaker.held and conv.barge_ins == 0
        await mic.send(False, ENDPOINT_FRAMES, play=True)
        await mic.play_until(lambda: len(conv.turns) == 2 if stops else len(conv.turns) == 1)
    assert len(transcriber.calls) == 2
    if stops:
        assert conv.barge_ins == 1 and conv.turns[0].interrupted
        assert [e.reason for e in events if isinstance(e, BargeIn)] == ["words over the reply"]
        assert conv.turns[1].transcript == said and len(transcriber.calls) == 2  # heard once
    else:
        assert conv.barge_ins == 0 and not conv.turns[0].interrupted
        assert mic.played_samples >= REPLY_FRAMES * FRAME_SAMPLES


@pytest.mark.parametrize("said, stops", [("Mm-hm.", False), ("Yeah, yeah, I see.", False),
                                         ("Seven, eight, nine.", False),
                                         ("What about Spain?", True)])
async def test_words_past_the_barge_in_over_a_held_reply_are_heard_at_its_pause(
    workers: Workers, said: str, stops: bool,
) -> None:
    """Speech over a held reply past barge_in_ms (Piper's "mm-hm" over a reply: up to
    740 ms confirmed) does not interrupt it; its words are heard at the turn's first pause.
    A backchannel, or the reply's own words (its echo, past a leaking canceller), let the
    reply go on; other words interrupt it there, and become the speculative reply to the
    turn, committed at its endpoint as any other."""
    transcriber = FakeTranscriber("tell me", said)
    models = workers.models(transcriber, FakeResponder(REPLY), FakeSynthesizer())
    conv, events = conversation(models, Speaker(), barge_in_ms=200, hold_ms=120)
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: conv.speaker.queued_frames == REPLY_FRAMES, what="reply audio")
        conv.options = replace(conv.options, vad=replace(TEST_VAD, endpoint_ms=600))
        mic.play(5)
        await mic.send(True, 20, play=True)  # 400 ms, held from 120 ms
        assert conv.speaker.held and conv.barge_ins == 0
        assert mic.played_samples == 10 * FRAME_SAMPLES  # 5 frames into the speech
        await mic.send(False, ONSET_FRAMES, play=True)  # the pause: its words are heard
        await until(lambda: len(transcriber.calls) == 2, what="the words heard")
        if stops:
            await until(lambda: conv.speculating() is not None, what="the reply to them")
            assert conv.barge_ins == 1 and conv.endpointer.pausing  # before the endpoint
            assert [e.reason for e in events if isinstance(e, BargeIn)] == ["words over the reply"]
        await mic.send(False, 30 - ONSET_FRAMES, play=True)  # its endpoint, 600 ms
        assert not conv.endpointer.speaking
        await mic.play_until(lambda: len(conv.turns) == (2 if stops else 1) and not conv.busy)
    assert transcriber.vocabularies == [None, TALK_OVER_VOCABULARY]  # "mm-hm" is expected
    if stops:
        assert conv.turns[0].interrupted and conv.turns[1].transcript == said
        assert len(transcriber.calls) == 2 and conv.speculation.committed == 2  # heard once
    else:
        assert conv.barge_ins == 0 and not conv.turns[0].interrupted
        assert mic.played_samples >= REPLY_FRAMES * FRAME_SAMPLES


async def test_a_backchannel_that_goes_on_into_a_question_interrupts_at_its_next_pause(
    workers: Workers,
) -> None:
    """"Yeah… but why?": the first pause's words let the reply go on; the speech after it
    holds the reply again, and the whole turn's words interrupt it at the next pause."""
    transcriber = FakeTranscriber("tell me", "Yeah.", "Yeah, but why?")
    models = workers.models(transcriber, FakeResponder(REPLY), FakeSynthesizer())
    conv, _ = conversation(models, Speaker(), barge_in_ms=200, hold_ms=120)
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: conv.speaker.queued_frames == REPLY_FRAMES, what="reply audio")
        await mic.send(True, 8, play=True)
        await mic.send(False, ONSET_FRAMES, play=True)
        await until(lambda: len(transcriber.calls) == 2, what="'yeah' heard")
        await mic.send(True, 8, play=True)  # the turn resumes: held again
        assert conv.speaker.held and conv.barge_ins == 0
        await mic.send(False, ENDPOINT_FRAMES, play=True)
        await mic.play_until(lambda: len(conv.turns) == 2 and not conv.busy)
    assert conv.turns[0].interrupted and conv.turns[1].transcript == "Yeah, but why?"
    assert transcriber.calls[2] > transcriber.calls[1]  # the whole turn, heard again


async def test_a_question_over_the_reply_with_a_pause_in_it_is_answered_whole(
    workers: Workers,
) -> None:
    """"What about… dogs?": its first words interrupt the reply at the pause and are
    speculated on; the user goes on, and the whole question is answered."""
    transcriber = FakeTranscriber("tell me", "What about...", "What about dogs?")
    responder = FakeResponder(REPLY)
    conv, _ = conversation(workers.models(transcriber, responder, FakeSynthesizer()), Speaker(),
                           barge_in_ms=200, hold_ms=120)
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: conv.speaker.queued_frames == REPLY_FRAMES, what="reply audio")
        await mic.send(True, 10, play=True)
        await mic.send(False, ONSET_FRAMES, play=True)
        await until(lambda: conv.barge_ins == 1, what="the reply interrupted at the pause")
        await mic.send(True, 6, play=True)  # "dogs?"
        await mic.send(False, ENDPOINT_FRAMES, play=True)
        await mic.play_until(lambda: len(conv.turns) == 2 and not conv.busy)
    assert conv.turns[1].transcript == "What about dogs?"
    assert responder.users[-1] == "What about dogs?"


async def test_a_held_reply_that_the_user_keeps_talking_over_is_interrupted_where_it_stopped(
    workers: Workers,
) -> None:
    """Without a pause to hear the words in, held_barge_in_ms of speech interrupts it."""
    models = workers.models(FakeTranscriber("tell me"), FakeResponder(REPLY), FakeSynthesizer())
    conv, events = conversation(models, Speaker(), barge_in_ms=200, hold_ms=120,
                                held_barge_in_ms=400)
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: conv.speaker.queued_frames == REPLY_FRAMES, what="reply audio")
        mic.play(20)  # four words heard
        await mic.send(True, 9, play=True)  # held at 120 ms: 5 more frames, one word, left
        assert conv.speaker.held and conv.barge_ins == 0
        assert mic.played_samples == 25 * FRAME_SAMPLES
        await mic.send(True, 10, play=True)  # 380 ms: past barge_in_ms, still held
        assert conv.speaker.held and conv.barge_ins == 0
        assert mic.played_samples == 25 * FRAME_SAMPLES
        await mic.send(True, 1, play=True)  # 400 ms: barge-in
        assert conv.barge_ins == 1 and not conv.speaker.held
    (turn,) = conv.turns
    assert turn.interrupted  # what played before the hold, and not a word more
    assert turn.heard == " ".join(REPLY_TEXT.split()[:5])
    assert [e for e in events if isinstance(e, BargeIn)] == [
        BargeIn(dropped_ms=20 * (REPLY_FRAMES - 25), reason="speech")]
    assert (conv.stats.holds, conv.stats.holds_released) == (1, 0)


async def test_speech_confirmed_in_a_pause_of_the_turn_holds_the_reply(workers: Workers) -> None:
    """Over our echo the gate confirms a word after a consonant before it resumes the turn:
    the frame that brings the confirmed speech to hold_ms holds the reply even so (it
    played on to the barge-in: room bench, stopped 540-590 ms after the user spoke)."""
    models = workers.models(FakeTranscriber("tell me"), FakeResponder(REPLY), FakeSynthesizer())
    conv, _ = conversation(models, Speaker(), barge_in_ms=200, hold_ms=120)
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: conv.speaker.queued_frames == REPLY_FRAMES, what="reply audio")
        await mic.send(True, 5, play=True)  # 100 ms: a turn starts, the reply plays on
        await mic.send(False, 3, play=True)  # its silence onset: a pause
        assert conv.endpointer.pausing and not conv.speaker.held
        await mic.send(True, 1, play=True)  # 120 ms confirmed, the turn not yet resumed
        assert conv.endpointer.pausing and conv.speaker.held
        assert mic.played_samples == 8 * FRAME_SAMPLES  # not the frame that held it
    assert conv.stats.holds == 1


async def test_with_holding_off_the_reply_plays_until_the_barge_in(workers: Workers) -> None:
    models = workers.models(FakeTranscriber("tell me"), FakeResponder(REPLY), FakeSynthesizer())
    conv, _ = conversation(models, Speaker(), barge_in_ms=200, hold_ms=None)
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: conv.speaker.queued_frames == REPLY_FRAMES, what="reply audio")
        await mic.send(True, 9, play=True)
        assert mic.played_samples == 9 * FRAME_SAMPLES and not conv.speaker.held
    assert conv.stats.holds == 0


def test_hold_ms_must_come_before_the_barge_in() -> None:
    from pipeline.conversation_options import ConversationOptions

    with pytest.raises(ValueError, match="hold_ms"):
        ConversationOptions(barge_in_ms=200, hold_ms=200)
    with pytest.raises(ValueError, match="held_barge_in_ms"):
        ConversationOptions(barge_in_ms=200, held_barge_in_ms=180)
    with pytest.raises(ValueError, match="hold_release_ms"):
        ConversationOptions(hold_release_ms=0)
    assert ConversationOptions(barge_in_ms=60, hold_ms=None).hold_ms is None


async def test_history_grows_by_one_user_and_one_assistant_message_per_turn(
    workers: Workers,
) -> None:
    responder = FakeResponder(["Sure thing."])
    models = workers.models(FakeTranscriber("first", "second"), responder, FakeSynthesizer())
    turns = []
    conv, _ = conversation(models, Speaker())
    conv.on_turn = turns.append
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 1)
        assert len(conv.history) == 2
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 2)
    assert conv.history == [
        Message("user", "first"), Message("assistant", "Sure thing."),
        Message("user", "second"), Message("assistant", "Sure thing."),
    ]
    assert responder.histories == [[], conv.history[:2]]  # turn 2 saw turn 1
    assert [t.index for t in turns] == [1, 2]
    assert [t.transcript for t in turns] == ["first", "second"]


async def test_an_empty_transcript_is_not_a_turn(workers: Workers) -> None:
    responder = FakeResponder(["never"])
    models = workers.models(FakeTranscriber(""), responder, FakeSynthesizer())
    conv, _ = conversation(models, Speaker())
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: not conv.busy)
        await asyncio.sleep(0.02)
    assert conv.turns == []
    assert conv.history == []
    assert responder.users == []


async def test_the_turn_timeline_is_ordered_and_its_stages_sum_to_the_first_audio(
    workers: Workers,
) -> None:
    responder = FakeResponder(["Well, ", "hello ", "there. ", "Bye."], delay_s=0.005)
    models = workers.models(FakeTranscriber("hi"), responder, FakeSynthesizer())
    conv, events = conversation(models, Speaker())
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 1)
    timeline = conv.turns[0].timeline
    s = timeline.stamps
    assert s[SPEECH_END] <= s[ENDPOINT]
    assert s[SPEECH_END] <= s[ASR_FINAL] <= s[TTFT] <= s[FIRST_CLAUSE] <= s[TTFA_SERVER]
    assert s[ENDPOINT] <= s[TTFA_SERVER]  # speculation never plays before the endpoint
    stages = timeline.stages()
    assert stages[-1].name == TTFA_SERVER
    assert sum(stage.ms for stage in stages) == pytest.approx(timeline.ms(TTFA_SERVER))
    (turn_event,) = [e for e in events if isinstance(e, Turn)]
    assert turn_event is conv.turns[0]
    assert to_wire(turn_event)["timeline_ms"] == timeline.relative_ms()


async def test_a_failed_reply_reports_an_error_and_the_next_turn_still_works(
    workers: Workers,
) -> None:
    transcriber = FakeTranscriber(RuntimeError("asr crashed"), "again")
    models = workers.models(transcriber, FakeResponder(["Ok."]), FakeSynthesizer())
    conv, events = conversation(models, Speaker(), speculate=False)
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: any(isinstance(e, Error) for e in events))
        await until(lambda: not conv.busy)
        assert conv.turns == []
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert Error("reply failed: asr crashed") in events
    assert conv.history == [Message("user", "again"), Message("assistant", "Ok.")]


async def test_a_failed_speculative_reply_is_retried_at_the_endpoint(workers: Workers) -> None:
    transcriber = FakeTranscriber(RuntimeError("asr crashed"), "again")
    models = workers.models(transcriber, FakeResponder(["Ok."]), FakeSynthesizer())
    conv, events = conversation(models, Speaker())
    async with Mic(conv) as mic:
        await mic.send(True, 10)
        await mic.send(False, ONSET_FRAMES)
        await until(lambda: any(isinstance(e, Error) for e in events))
        await mic.send(False, ENDPOINT_FRAMES - ONSET_FRAMES)
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert len(transcriber.calls) == 2
    assert conv.history == [Message("user", "again"), Message("assistant", "Ok.")]


async def test_ending_the_input_cancels_the_reply_in_progress(workers: Workers) -> None:
    responder = FakeResponder(["word "] * 200, delay_s=0.01)
    models = workers.models(FakeTranscriber("hi"), responder, FakeSynthesizer())
    conv, _ = conversation(models, Speaker())
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: responder.produced >= 2)
        await asyncio.wait_for(mic.end(), 2)
    assert not conv.busy
    assert await asyncio.to_thread(responder.stopped_early.wait, 2)
    assert conv.turns == []


async def test_cancelling_run_stops_all_reply_work(workers: Workers) -> None:
    responder = FakeResponder(["word "] * 200, delay_s=0.01)
    models = workers.models(FakeTranscriber("hi"), responder, FakeSynthesizer())
    conv, _ = conversation(models, Speaker())
    mic = Mic(conv)
    await mic.__aenter__()
    await mic.say()
    await until(lambda: responder.produced >= 2)
    task = mic.task
    assert task is not None
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not conv.busy
    assert await asyncio.to_thread(responder.stopped_early.wait, 2)


async def test_speech_started_is_emitted_when_the_user_starts_talking(workers: Workers) -> None:
    models = workers.models(FakeTranscriber("hi"), FakeResponder(["Ok."]), FakeSynthesizer())
    conv, events = conversation(models, Speaker())
    async with Mic(conv) as mic:
        await mic.send(True, 1)
        assert events == []
        await mic.send(True, 1)
        assert events == [UserSpeaking()]


async def test_after_each_turn_the_next_prompt_is_prefilled_in_the_llm_worker_at_background(
    workers: Workers,
) -> None:
    """Once a turn is in the history, the responder reads the next prompt's start in its
    own worker, behind any reply (background priority), never on the event loop."""
    responder = FakeResponder(["Sure thing."])
    models = workers.models(FakeTranscriber("first", "second"), responder, FakeSynthesizer())
    priorities: dict[str, Priority] = {}
    run = models.llm_worker.run

    async def spy(fn: Callable[..., Any], *args: Any, priority: Priority = Priority.CONFIRMED
                  ) -> Any:
        priorities[fn.__name__] = priority
        return await run(fn, *args, priority=priority)

    models.llm_worker.run = spy  # type: ignore[method-assign]
    conv, _ = conversation(models, Speaker())
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(lambda: len(responder.prefills) == 1)
        assert responder.prefills[0] == (conv.history, "apace-llm")
        await mic.say()
        await mic.play_until(lambda: len(responder.prefills) == 2)
    assert [history for history, _ in responder.prefills] == [conv.history[:2], conv.history]
    assert priorities["prefill"] == Priority.BACKGROUND


async def test_a_failed_prefill_does_not_end_the_conversation(workers: Workers) -> None:
    class BrokenPrefill(FakeResponder):
        def prefill(self, history: object) -> None:
            raise RuntimeError("llama_decode failed")

    models = workers.models(FakeTranscriber("Hi."), BrokenPrefill(["Hello."]), FakeSynthesizer())
    conv, _ = conversation(models, Speaker())
    async with Mic(conv) as mic:
        for _ in range(2):
            await mic.send(True, 10)
            await mic.send(False, ENDPOINT_FRAMES)
            turns = len(conv.turns)
            await mic.play_until(lambda turns=turns: len(conv.turns) == turns + 1)
    assert len(conv.turns) == 2


@pytest.mark.parametrize(("soft_frames", "heard_again"), [
    (0, None), (4, "how many items are on my list now"), (4, "How many items are on my list?"),
])
async def test_a_soft_last_word_after_the_onset_is_heard_with_the_turn(
    workers: Workers, soft_frames: int, heard_again: str | None,
) -> None:
    """A word the gate doubts after the silence onset does not resume the turn, but the
    transcript made at the onset lacks it: when it stops, the turn is transcribed again
    while the pause goes on, and the speculation replaced if the words changed (kept if
    only the room spoke). Without such a word the speculation is committed as it is."""
    transcriber = FakeTranscriber("how many items are on my list", heard_again or "unused")
    responder = FakeResponder(["Two."], delay_s=0.05)
    conv, _ = conversation(workers.models(transcriber, responder, FakeSynthesizer()), Speaker())
    gate = DoubtfulGate(TEST_VAD, classify=any_sound)
    conv.endpointer = gate
    async with Mic(conv) as mic:
        await gate.soft_word_after_onset(mic, responder.started, soft_frames)  # 80 ms or none
        assert conv.speculation.cancelled == 0  # the gate did not hear the turn resume
        await mic.send(False, ENDPOINT_FRAMES)
        await mic.play_until(lambda: len(conv.turns) == 1)
    if heard_again is not None:
        assert len(transcriber.calls) == 2 and conv.speculation.reheard == 1
        assert transcriber.calls[1] > transcriber.calls[0]  # the whole turn, soft word too
        assert conv.speculation.committed == 1
    if heard_again == "how many items are on my list now":
        assert conv.speculation.cancelled == 1 and len(responder.users) == 2
        assert conv.history[0] == Message("user", "how many items are on my list now")
    elif heard_again is not None:  # the same words: the room's voice; the reply stands
        assert conv.speculation.kept == 1 and conv.speculation.cancelled == 0
        assert responder.users == ["how many items are on my list"]
    else:
        assert conv.speculation.committed == 1 and len(transcriber.calls) == 1
        assert conv.history[0] == Message("user", "how many items are on my list")


@pytest.mark.parametrize("second", ["set a timer for ten minutes", "set a timer"])
async def test_an_endpoint_during_hearing_again_waits_for_those_words(
    workers: Workers, second: str,
) -> None:
    """The turn ends while it is being heard again (a slow transcription): the endpoint
    waits for those words, then commits the speculation they confirm or the reply they
    start — one turn, no third transcription of the same audio."""
    class SlowSecond(FakeTranscriber):
        def transcribe(self, pcm: Pcm, context: str = "", *, vocabulary: str | None = None) -> str:
            self.delay_s = 0.3 if len(self.calls) == 1 else 0.0
            return super().transcribe(pcm, context, vocabulary=vocabulary)

    transcriber = SlowSecond("set a timer", second)
    responder = FakeResponder(["Done."])
    conv, _ = conversation(workers.models(transcriber, responder, FakeSynthesizer()), Speaker())
    gate = DoubtfulGate(TEST_VAD, classify=any_sound)
    conv.endpointer = gate
    async with Mic(conv) as mic:
        await gate.soft_word_after_onset(mic, responder.started)
        await mic.send(False, ENDPOINT_FRAMES)  # the endpoint, the words still to come
        assert not conv.turns and conv.speculation.committed == 0
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert len(transcriber.calls) == 2 and conv.speculation.committed == 1
    assert conv.history[0] == Message("user", second)
    assert len(conv.turns) == 1
    assert conv.speculation.kept == (second == "set a timer")


async def test_the_prefill_between_turns_reads_what_the_next_reply_reads(
    workers: Workers,
) -> None:
    """Past the history window (4 exchanges), what is read ahead between turns is the
    windowed history the next reply's LLM gets, not the whole conversation (which it
    would never read: it was seconds of wasted CPU a turn in long sessions)."""
    responder = FakeResponder(["Sure thing."])
    transcriber = FakeTranscriber(*[f"question {i}" for i in range(7)])
    conv, _ = conversation(workers.models(transcriber, responder, FakeSynthesizer()), Speaker())
    async with Mic(conv) as mic:
        for turn in range(7):
            await mic.say()
            await mic.play_until(lambda turn=turn: len(responder.prefills) == turn + 1)
    assert len(responder.histories) == 7
    for turn in range(1, 7):
        assert responder.histories[turn] == responder.prefills[turn - 1][0]
    assert max(len(history) for history, _ in responder.prefills) == 8  # 4 exchanges



async def test_a_held_reply_stays_held_while_the_words_are_confirmed_in_runs(
    workers: Workers,
) -> None:
    """Over our echo and background talk a user's words are confirmed in short runs with
    frames the gate takes for the echo between them: the turn pauses, and a frame or two
    of confirmed speech does not resume it. The hold lasts while confirmed speech keeps
    coming (it counted the pause's silence, and let the reply go on mid-talk-over), and
    the barge-in follows. (Each pause's words are heard: none yet, over the echo.)"""
    models = workers.models(FakeTranscriber("tell me", ""), FakeResponder(REPLY),
                            FakeSynthesizer())
    conv, _ = conversation(models, Speaker(), barge_in_ms=200, hold_ms=80,
                           held_barge_in_ms=200)
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: conv.speaker.queued_frames == REPLY_FRAMES, what="reply audio")
        conv.options = replace(conv.options, vad=replace(TEST_VAD, endpoint_ms=600))
        await mic.send(True, 4, play=True)  # 80 ms confirmed: held
        assert conv.speaker.held
        played = mic.played_samples
        for _ in range(4):  # 80 ms taken for echo (the turn pauses), one confirmed frame
            await mic.send(False, 4, play=True)
            await mic.send(True, 1, play=True)  # too short to resume the turn
            assert conv.speaker.held, "released while the user was still talking"
        assert conv.endpointer.pausing and conv.barge_ins == 0 and mic.played_samples == played
        await mic.send(True, 4, play=True)  # 200 ms confirmed in all: the barge-in
        assert conv.barge_ins == 1
    assert conv.stats.holds_released == 0



async def test_a_held_reply_stays_held_while_the_turn_goes_on_unconfirmed(
    workers: Workers,
) -> None:
    """Voice the gate doubts but that keeps the turn going (a word under our echo) keeps
    the hold until the turn pauses and its words decide ("stop": the reply is
    interrupted there, before the endpoint)."""
    models = workers.models(FakeTranscriber("tell me", "stop"), FakeResponder(REPLY),
                            FakeSynthesizer())
    conv, _ = conversation(models, Speaker(), barge_in_ms=200, hold_ms=80)
    gate = DoubtfulGate(TEST_VAD, classify=any_sound)
    conv.endpointer = gate
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: conv.speaker.queued_frames == REPLY_FRAMES, what="reply audio")
        await mic.send(True, 4, play=True)  # held
        gate.doubt = True
        await mic.send(True, 15, play=True)  # 300 ms voiced, none of it confirmed
        assert conv.speaker.held and conv.endpointer.speaking and not conv.endpointer.pausing
        gate.doubt = False
        await mic.send(False, ONSET_FRAMES, play=True)  # then a pause: its words are heard
        await mic.play_until(lambda: conv.barge_ins == 1)
        assert conv.endpointer.pausing
    assert conv.stats.holds_released == 0 and conv.turns[0].interrupted


def test_the_replys_own_words_coming_back_are_told_from_the_users() -> None:
    reply = "The moon is about three hundred and eighty four thousand kilometres away."
    for words in ("the moon is about", "three hundred and eighty", "thousand kilometres",
                  "the moon is a bat three hundred"):
        assert repeats_reply(words, reply), words
    for words in ("moon", "how far is the moon", "what about mars", "is it far away", ""):
        assert not repeats_reply(words, reply), words


def test_what_says_go_on_and_what_interrupts() -> None:
    for words in ("mm hm", "mhm", "uh huh", "yeah yeah", "okay", "i see", "right right",
                  "mmhn", "m h m", "m h n", "mmhm", "m h m h n", "mm hm hm hm"):
        assert is_backchannel(words), words
    for words in ("wait", "stop", "no", "yes", "yeah but why", "okay stop", "thank you", "",
                  "n", "h n", "m h m what"):
        assert not is_backchannel(words), words
