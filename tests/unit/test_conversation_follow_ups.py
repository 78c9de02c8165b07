"""Follow-ups through the conversation: a finished turn leaves its result ("84", "10
kilometers in miles", a day, the LLM's topic) and the next turn's skills read it; a
speculation the user talked on from leaves nothing; the LLM reads the exchange before a
follow-up on its own topic."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta

import pytest

from pipeline.answer.llm import Message
from pipeline.answer.reply import NOT_CAUGHT
from pipeline.conversation import Conversation
from pipeline.conversation_options import ConversationOptions
from pipeline.listen.vad import Endpointer
from pipeline.skills import Timers, default_skills
from pipeline.skills.clock import ClockSkill, say_date
from pipeline.skills.convert import ConvertSkill
from pipeline.skills.days import DayFollowUp
from pipeline.skills.hush import HushSkill
from pipeline.skills.math import MathSkill
from pipeline.skills.offline import OfflineSkill
from pipeline.skills.refusals import RefusalFollowUp
from pipeline.skills.social import SocialSkill
from pipeline.speaker import Speaker
from tests.fakes import (
    ENDPOINT_FRAMES,
    ONSET_FRAMES,
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


def chat(workers: Workers, transcripts: Sequence[str], reply: Sequence[str] = ("unused",), *,
         responder: FakeResponder | None = None) -> tuple[Conversation, FakeResponder]:
    """A conversation with the server's skills (in its order) and a scripted ear and LLM."""
    responder = responder or FakeResponder(reply)
    models = workers.models(FakeTranscriber(*transcripts), responder, FakeSynthesizer())
    timers = Timers()
    skills = default_skills(timers=timers, store=None, extra=[
        HushSkill(), SocialSkill(), DayFollowUp(), ClockSkill(), MathSkill(), ConvertSkill(),
        RefusalFollowUp(), OfflineSkill()])
    options = ConversationOptions(vad=TEST_VAD, endpoint=None, partial_interval_s=None)
    conv = Conversation(models, Speaker(), options, skills=skills, timers=timers)
    conv.endpointer = Endpointer(TEST_VAD, classify=any_sound)  # every frame sent is speech
    return conv, responder


async def turns(conv: Conversation, count: int) -> list[str]:
    """Say `count` turns, each after the last has played out; their replies."""
    async with Mic(conv) as mic:
        for n in range(1, count + 1):
            await mic.say()
            await mic.play_until(lambda n=n: len(conv.turns) == n)  # type: ignore[misc]
    return [turn.reply for turn in conv.turns]


async def test_add_five_to_that_works_on_the_last_answer(workers: Workers) -> None:
    conv, responder = chat(workers, ["What is 12 times 7?", "Add five to that.",
                                     "And divided by two?"])
    assert await turns(conv, 3) == ["12 times 7 is 84.", "84 plus 5 is 89.",
                                    "89 divided by 2 is forty-four and a half."]
    assert [t.skill for t in conv.turns] == ["math"] * 3 and responder.users == []
    assert conv.last_result is not None and conv.last_result.value == 44.5


async def test_a_follow_up_with_nothing_before_it_asks_what_it_works_on(workers: Workers) -> None:
    conv, responder = chat(workers, ["Add five to that."])
    assert await turns(conv, 1) == ["Add 5 to which number? I have no earlier answer to work on."]
    assert responder.users == [] and conv.last_result is None


async def test_a_follow_up_after_the_llms_answer_goes_to_the_llm_with_that_exchange(
    workers: Workers,
) -> None:
    conv, responder = chat(workers, ["How tall is the Eiffel Tower?", "Add five to that."],
                           ["It's 330 meters."])
    await turns(conv, 2)
    assert responder.users == ["How tall is the Eiffel Tower?", "Add five to that."]
    assert responder.histories[1] == [Message("user", "How tall is the Eiffel Tower?"),
                                      Message("assistant", "It's 330 meters.")]


async def test_and_in_feet_converts_what_was_asked_before(workers: Workers) -> None:
    conv, responder = chat(workers, ["How many miles is 10 kilometres?", "And in feet?",
                                     "What about 20 kilometres?"])
    assert await turns(conv, 3) == ["10 kilometers is about 6.2 miles.",
                                    "10 kilometers is about 32808 feet.",
                                    "20 kilometers is about 65617 feet."]
    assert responder.users == []


async def test_and_in_celsius_after_a_temperature_conversion(workers: Workers) -> None:
    conv, _ = chat(workers, ["What's 100 Fahrenheit in Kelvin?", "And in Celsius?"])
    assert (await turns(conv, 2))[1] == "100 degrees Fahrenheit is about 38 degrees Celsius."


async def test_and_tomorrow_and_the_day_after_follow_a_date(workers: Workers) -> None:
    conv, responder = chat(workers, ["What's the date?", "And tomorrow?", "And the day after?"])
    replies = await turns(conv, 3)
    today = datetime.now().astimezone().date()
    assert replies[1] == f"Tomorrow is {say_date(today + timedelta(days=1))}."
    assert replies[2] == f"The day after tomorrow is {say_date(today + timedelta(days=2))}."
    assert [t.skill for t in conv.turns] == ["clock"] * 3 and responder.users == []


async def test_what_about_tomorrow_follows_what_day_it_is(workers: Workers) -> None:
    conv, _ = chat(workers, ["What day is it today?", "What about tomorrow?"])
    tomorrow = datetime.now().astimezone().date() + timedelta(days=1)
    assert (await turns(conv, 2))[1] == f"Tomorrow is {say_date(tomorrow)}."


async def test_the_day_after_with_no_day_before_goes_to_the_llm(workers: Workers) -> None:
    conv, responder = chat(workers, ["What is 12 times 7?", "And the day after?"], ["Of what?"])
    assert (await turns(conv, 2))[1] == "Of what?"
    assert responder.users == ["And the day after?"]


async def test_an_llm_topic_follow_up_reaches_the_llm_with_the_exchange(workers: Workers) -> None:
    """"When was he born?" after "Who wrote Romeo and Juliet?": no skill takes it, and the
    LLM reads the exchange it refers to; so does the one after it."""
    conv, responder = chat(workers, ["Who wrote Romeo and Juliet?", "When was he born?",
                                     "And what else did he write?"], ["Shakespeare wrote it."])
    replies = await turns(conv, 3)
    assert NOT_CAUGHT not in replies and [t.skill for t in conv.turns] == [None] * 3
    first = [Message("user", "Who wrote Romeo and Juliet?"),
             Message("assistant", "Shakespeare wrote it.")]
    assert responder.histories[1] == first
    assert responder.histories[2][:2] == first and len(responder.histories[2]) == 4
    assert conv.last_result is not None and conv.last_result.kind == "topic"


async def test_a_speculation_the_user_talked_on_from_leaves_no_result(workers: Workers) -> None:
    """A sum heard at a pause the user then went on from ("what is 2 times 3 …") was never
    the turn's answer: "plus one" after the turn still works on the answer before."""
    conv, _ = chat(workers, ["What is 12 times 7?", "What is 2 times 3?", "Plus one."])
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 1)
        await mic.send(True, 10)
        await mic.send(False, ONSET_FRAMES)
        await until(lambda: (r := conv.speculating()) is not None and r.skill is not None,
                    what="the speculation's sum")
        await mic.send(True, 10)  # the user goes on talking
        assert conv.speculation.cancelled == 1
        assert conv.last_result is not None and conv.last_result.value == 84
        await mic.send(False, ENDPOINT_FRAMES)
        await mic.play_until(lambda: len(conv.turns) == 2)
    assert conv.turns[1].reply == "84 plus 1 is 85."


async def test_and_tomorrow_after_a_weather_refusal_is_refused_without_the_llm(
    workers: Workers,
) -> None:
    conv, responder = chat(workers, ["What's the weather like?", "And tomorrow?"])
    replies = await turns(conv, 2)
    assert replies[1] == ("I can't check the weather for tomorrow either: "
                          "I work offline, with no internet.")
    assert conv.turns[1].skill == "offline" and responder.users == []


class CallsFirst(FakeResponder):
    """To its first user writes only a call it cannot make: "Sorry, I didn't catch that.";
    then answers plainly (the 0.5B, to a misheard word)."""

    tools = True

    def reply(self, history: Sequence[Message], user: str, draft: str | None = None,
              plain: bool = False) -> Iterator[str]:
        if self.users and self.users[0] != user:
            yield from super().reply(history, user, draft, plain)
            return
        self.users.append(user)
        self.histories.append(list(history))
        yield from ["<tools> <function", ' name="set timer"> <duration>5</duration>']


async def test_a_turn_not_understood_keeps_the_result_before_it(workers: Workers) -> None:
    conv, _ = chat(workers, ["What is 12 times 7?", "M-m-m-champ.", "Plus five."],
                   responder=CallsFirst(["unused"]))
    assert await turns(conv, 3) == ["12 times 7 is 84.", NOT_CAUGHT, "84 plus 5 is 89."]


class CallsUnlessPlain(FakeResponder):
    """A tool-calling LLM that answers every question with a call to the clock unless told
    not to call (the 0.5B's habit with a short question)."""

    tools = True

    def reply(self, history: Sequence[Message], user: str, draft: str | None = None,
              plain: bool = False) -> Iterator[str]:
        if plain or user.startswith("Who"):
            yield from super().reply(history, user, draft, plain)
            return
        self.users.append(user)
        self.histories.append(list(history))
        yield from ["<tools> <function", ' name="current_time"> </function> </tools>']


async def test_a_call_the_follow_up_does_not_support_is_answered_in_words_with_the_exchange(
    workers: Workers,
) -> None:
    """"When was he born?" answered with a call to the clock: not believed (no time words),
    so the LLM answers in words, and reads the exchange it follows when it does."""
    conv, responder = chat(workers, ["Who wrote Romeo and Juliet?", "When was he born?"],
                           responder=CallsUnlessPlain(["Shakespeare, in 1564."]))
    replies = await turns(conv, 2)
    assert replies[1] == "Shakespeare, in 1564." and conv.turns[1].skill is None
    assert responder.plain[-1] and responder.users[-1] == "When was he born?"
    assert responder.histories[-1] == [Message("user", "Who wrote Romeo and Juliet?"),
                                       Message("assistant", "Shakespeare, in 1564.")]


async def test_the_weather_asked_again_later_is_declined_as_still_so(workers: Workers) -> None:
    conv, responder = chat(workers, ["What's the weather in Berlin?", "What is 12 times 7?",
                                     "What's the weather?"])
    replies = await turns(conv, 3)
    assert replies[0] == "I can't check the weather in Berlin: I work offline, with no internet."
    assert replies[2] == "I still can't check the weather: I work offline, with no internet."
    assert responder.users == []
