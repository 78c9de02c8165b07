"""Reply: the copy guard regenerates, the spoken-length budget cuts, skills answer without
the LLM and act only once the turn is committed (scripted fakes)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from pipeline.answer.llm import Message
from pipeline.answer.reply import NOT_CAUGHT, Reply
from pipeline.skills.base import SkillReply
from pipeline.speaker import Speaker
from pipeline.timeline import SPEECH_END, Timeline, now
from tests.fakes import FakeResponder, FakeSynthesizer, FakeTranscriber, Workers, play_out, until

pytestmark = pytest.mark.timeout(10)

STUCK = "I'm sorry, as a voice assistant I cannot access weather data. However, you"


class CopyingResponder(FakeResponder):
    """Copies the last assistant turn when it has history (as SmolLM2 did); answers
    the question when it has none."""

    def __init__(self) -> None:
        super().__init__(["unused"])

    def reply(self, history: Sequence[Message], user: str, draft: str | None = None,
              plain: bool = False) -> Iterator[str]:
        self.histories.append(list(history))
        self.threads.append(threading.current_thread().name)
        text = history[-1].content if history else "Paris is the capital of France."
        for word in text.split(" "):
            yield word + " "


def make(workers: Workers, responder: FakeResponder, history: list[Message], *,
         transcript: str = "What is the capital of France?", speculative: bool = False,
         skill: SkillReply | None = None) -> tuple[Reply, Speaker, FakeSynthesizer]:
    synthesizer = FakeSynthesizer()
    models = workers.models(FakeTranscriber(transcript), responder, synthesizer)
    timeline = Timeline()
    timeline.stamp(SPEECH_END, now())
    speaker = Speaker()
    reply = Reply(models, speaker, history, np.zeros(16_000, np.int16), timeline,
                  lambda _event: None, speculative=speculative,
                  answer_skill=(lambda _t: skill) if skill is not None else None)
    if not speculative:
        reply.commit()
    return reply, speaker, synthesizer


async def run(reply: Reply, speaker: Speaker) -> None:
    await play_out(speaker, asyncio.create_task(reply.run()))


async def test_a_reply_that_copies_an_earlier_one_is_regenerated_without_history(
    workers: Workers,
) -> None:
    history = [Message("user", "weather?"), Message("assistant", STUCK)]
    responder = CopyingResponder()
    reply, speaker, synthesizer = make(workers, responder, history)
    await run(reply, speaker)
    assert reply.copies == 1
    assert responder.histories[1] == []
    assert reply.text == "Paris is the capital of France."
    assert not any("sorry" in text for text in synthesizer.texts)  # the copy was never spoken


async def test_a_reply_is_cut_after_two_sentences_and_the_llm_stops(workers: Workers) -> None:
    responder = FakeResponder(["Paris is the capital. ", "It is in France. ", "It is big. ",
                               "It has a tower. "], delay_s=0.01)
    reply, speaker, synthesizer = make(workers, responder, [])
    await run(reply, speaker)
    assert reply.text == "Paris is the capital. It is in France."
    assert " ".join(synthesizer.texts) == reply.text
    await until(responder.stopped_early.is_set, what="the LLM stopped")
    assert responder.produced < 4


async def test_a_long_first_sentence_is_the_whole_reply(workers: Workers) -> None:
    # 12 words: an ordinary question gets no second sentence after it (reply_words).
    first = "Paris is the capital of France and the largest city in the country. "
    responder = FakeResponder([first, "It has a famous tower. "], delay_s=0.01)
    reply, speaker, synthesizer = make(workers, responder, [])
    await run(reply, speaker)
    assert reply.text == first.strip()
    assert " ".join(synthesizer.texts) == reply.text


async def test_two_short_sentences_are_both_said_and_more_when_more_is_asked(
    workers: Workers,
) -> None:
    responder = FakeResponder(["Paris. ", "It is in France. "])
    reply, speaker, _ = make(workers, responder, [])
    await run(reply, speaker)
    assert reply.text == "Paris. It is in France."
    long = "Paris is the capital of France and the largest city in the country. "
    responder = FakeResponder([long, "It has a famous tower. "])
    reply, speaker, _ = make(workers, responder, [], transcript="Tell me about Paris.")
    await run(reply, speaker)
    assert reply.text == long + "It has a famous tower."


async def test_an_offer_of_more_help_after_the_answer_is_not_said(workers: Workers) -> None:
    responder = FakeResponder(["Hamlet is by Shakespeare. ", "What can I do for you? "])
    reply, speaker, synthesizer = make(workers, responder, [], transcript="Who wrote Hamlet?")
    await run(reply, speaker)
    assert reply.text == "Hamlet is by Shakespeare."
    assert synthesizer.texts == ["Hamlet is by Shakespeare."]
    # As the whole reply, an offer is said.
    responder = FakeResponder(["How can I help you today? "])
    reply, speaker, _ = make(workers, responder, [], transcript="Hello!")
    await run(reply, speaker)
    assert reply.text == "How can I help you today?"


async def test_an_unfinished_tail_after_a_whole_sentence_is_not_spoken(workers: Workers) -> None:
    responder = FakeResponder(["The answer is four. ", "However, ", "you"])
    reply, speaker, synthesizer = make(workers, responder, [])
    await run(reply, speaker)
    assert reply.text == "The answer is four."
    assert synthesizer.texts == ["The answer is four."]


async def test_a_skill_answers_without_the_llm_and_acts_once_at_commit(workers: Workers) -> None:
    acted: list[str] = []
    skill = SkillReply("Timer set for 10 minutes.", "timer", action=lambda: acted.append("set"))
    responder = FakeResponder(["never"])
    reply, speaker, synthesizer = make(workers, responder, [], speculative=True, skill=skill)
    task = asyncio.create_task(reply.run())
    await until(lambda: synthesizer.finished == ["Timer set for 10 minutes."])
    assert acted == []  # a speculation changes nothing
    reply.commit()
    reply.commit()
    await play_out(speaker, task)
    assert acted == ["set"]
    assert responder.histories == []
    assert reply.text == "Timer set for 10 minutes."


async def test_a_cancelled_speculative_skill_never_acts(workers: Workers) -> None:
    acted: list[str] = []
    skill = SkillReply("Added milk.", "list", action=lambda: acted.append("add"))
    reply, _speaker, synthesizer = make(workers, FakeResponder(["x"]), [], speculative=True,
                                        skill=skill)
    task = asyncio.create_task(reply.run())
    await until(lambda: synthesizer.finished == ["Added milk."])
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert acted == []


class ToolResponder(FakeResponder):
    """An LLM whose template takes tools and that answers with a call."""

    tools = True


async def test_a_tool_call_is_answered_by_the_skill_it_names(workers: Workers) -> None:
    asked: list[str] = []

    def skills(request: str) -> SkillReply | None:
        asked.append(request)
        if request == "set a timer for 10 minutes":
            return SkillReply("OK, a 10 minute timer.", "timer", action=lambda: None)
        return None

    responder = ToolResponder(['{"name": "set_timer", ', '"arguments": {"duration": ',
                               '"10 minutes"}}'])
    reply, speaker, synthesizer = make(workers, responder, [],
                                       transcript="Let me know when ten minutes are up.")
    reply.answer_skill = skills
    await run(reply, speaker)
    assert asked == ["Let me know when ten minutes are up.", "set a timer for 10 minutes"]
    assert reply.skill is not None and reply.skill.skill == "timer"
    assert synthesizer.texts == ["OK, a 10 minute timer."]  # the JSON was never spoken


async def test_a_plain_answer_from_a_tool_model_is_spoken_as_usual(workers: Workers) -> None:
    responder = ToolResponder(["Paris ", "is the capital."])
    reply, speaker, synthesizer = make(workers, responder, [])
    reply.answer_skill = lambda _request: None
    await run(reply, speaker)
    assert reply.text == "Paris is the capital."
    assert " ".join(synthesizer.texts) == "Paris is the capital."


class CallingResponder(FakeResponder):
    """Takes tools, and calls one unless told to answer in words."""

    tools = True

    def __init__(self, words: Sequence[str] = ("There are ", "8 planets.")) -> None:
        super().__init__(["unused"])
        self.words = words

    def reply(self, history: Sequence[Message], user: str, draft: str | None = None,
              plain: bool = False) -> Iterator[str]:
        self.plain.append(plain)
        yield from (self.words if plain else
                    ['{"name": "set_timer", ', '"arguments": {"duration": "20 minutes"}}'])


async def test_a_tool_call_the_words_do_not_support_is_answered_in_words(
    workers: Workers,
) -> None:
    """Words a timer call could be believed for, but not this call (20 minutes, never
    said): the call is refused and the question answered in words."""
    responder = CallingResponder()
    reply, speaker, synthesizer = make(workers, responder, [],
                                       transcript="In 2 minutes: how many planets are there?")
    reply.answer_skill = lambda _request: None
    await run(reply, speaker)
    assert responder.plain == [False, True]
    assert reply.skill is None
    assert reply.text == "There are 8 planets."
    assert " ".join(synthesizer.texts) == "There are 8 planets."


async def test_a_call_written_again_when_told_to_answer_in_words_is_never_said(
    workers: Workers,
) -> None:
    """The 0.5B, asked "Could you wait meet up in 20 minutes?" (misheard), wrote a call the
    words did not support, then, told not to call, this: "json name: set timer," was said."""
    responder = CallingResponder(["```json\nname: set_timer, ", 'arguments: duration="20 ',
                                  'minutes"\n```'])
    reply, speaker, synthesizer = make(workers, responder, [],
                                       transcript="In 2 minutes: how many planets are there?")
    reply.answer_skill = lambda _request: None
    await run(reply, speaker)
    assert responder.plain == [False, True]
    assert reply.text == NOT_CAUGHT
    assert synthesizer.texts == [NOT_CAUGHT]


async def test_words_no_call_could_serve_are_answered_in_one_plain_pass(
    workers: Workers,
) -> None:
    responder = CallingResponder()
    reply, speaker, _ = make(workers, responder, [], transcript="How many planets are there?")
    reply.answer_skill = lambda _request: None
    await run(reply, speaker)
    assert responder.plain == [True]
    assert reply.text == "There are 8 planets."


async def test_a_plain_answer_in_a_code_block_is_said_without_the_fence(
    workers: Workers,
) -> None:
    responder = CallingResponder(["```", "json\n", "There are ", "8 planets."])
    reply, speaker, synthesizer = make(workers, responder, [],
                                       transcript="How many planets are there?")
    reply.answer_skill = lambda _request: None
    await run(reply, speaker)
    assert reply.text == "There are 8 planets."
    assert " ".join(synthesizer.texts) == "There are 8 planets."


class TaggingResponder(CallingResponder):
    """Writes its call as markup (the 0.5B, to "was 1900 a leap year" heard in background
    talk: '<tools> <function name="set timer"> …' was said aloud)."""

    def reply(self, history: Sequence[Message], user: str, draft: str | None = None,
              plain: bool = False) -> Iterator[str]:
        self.plain.append(plain)
        yield from (self.words if plain else
                    ["<tools> <function", ' name="set timer"> <arguments> <duration>',
                     "1900</duration> </arguments> </function> </tools>"])


async def test_a_call_written_as_markup_is_never_said(workers: Workers) -> None:
    responder = TaggingResponder(["No, ", "1900 was not a leap year."])
    reply, speaker, synthesizer = make(workers, responder, [],
                                       transcript="was 1900 a leap year.")
    asked: list[str] = []
    reply.answer_skill = lambda request: asked.append(request) or None  # type: ignore[func-returns-value]
    await run(reply, speaker)
    assert asked == ["was 1900 a leap year."]  # not the call: '1900' is not a duration
    assert responder.plain == [False, True]
    assert reply.text == "No, 1900 was not a leap year."
    assert "<" not in " ".join(synthesizer.texts)


async def test_a_reply_in_other_markup_is_said_at_once_without_its_tags(workers: Workers) -> None:
    responder = CallingResponder(["unused"])
    responder.reply = lambda *a, **k: iter(["<b>", "Paris</b> is ", "the capital."])  # type: ignore[method-assign]
    reply, speaker, synthesizer = make(workers, responder, [],
                                       transcript="What is the capital of France?")
    reply.answer_skill = lambda _request: None
    await run(reply, speaker)
    assert " ".join(synthesizer.texts) == "Paris is the capital."  # one pass, no tags read


class NamingResponder(CallingResponder):
    """Calls a timer tool in many pieces unless told to answer in words; counts the pieces
    of the call it was asked for."""

    CALL = ('{"name": ', '"set_timer"', ', "arguments": ', '{"duration": ', '"10 ', 'minutes"', '}}')

    def __init__(self) -> None:
        super().__init__(["It is ", "one hour."])
        self.call_pieces = 0

    def reply(self, history: Sequence[Message], user: str, draft: str | None = None,
              plain: bool = False) -> Iterator[str]:
        self.plain.append(plain)
        if plain:
            yield from self.words
            return
        for piece in self.CALL:
            self.call_pieces += 1
            yield piece
            time.sleep(0.02)  # a token's time: the reply may stop the call before its end


async def test_a_call_to_a_tool_the_words_cannot_support_is_stopped_at_its_name(
    workers: Workers,
) -> None:
    """'time' in the words lets a call be believed (the time now), not a timer's: once the
    call names set_timer the rest of it is not made, and the words are answered at once."""
    responder = NamingResponder()
    reply, speaker, synthesizer = make(
        workers, responder, [], transcript="What is the time difference between London and Paris?")
    reply.answer_skill = lambda _request: None
    await run(reply, speaker)
    assert responder.plain == [False, True] and reply.passes == 2
    assert responder.call_pieces < len(NamingResponder.CALL)
    assert reply.text == "It is one hour." and synthesizer.texts == ["It is one hour."]


async def test_a_call_to_a_tool_the_words_may_support_is_heard_to_its_end(
    workers: Workers,
) -> None:
    asked: list[str] = []
    responder = NamingResponder()
    reply, speaker, _ = make(workers, responder, [], transcript="Ten minutes for the eggs, please.")
    reply.answer_skill = lambda request: asked.append(request) or None  # type: ignore[func-returns-value]
    await run(reply, speaker)
    assert responder.call_pieces == len(NamingResponder.CALL)
    assert asked[-1] == "set a timer for 10 minutes"


async def test_a_plain_answer_takes_one_llm_pass(workers: Workers) -> None:
    responder = CallingResponder()
    reply, speaker, _ = make(workers, responder, [], transcript="How many planets are there?")
    reply.answer_skill = lambda _request: None
    await run(reply, speaker)
    assert reply.passes == 1 and reply.text == "There are 8 planets."
