"""An honest refusal never leaks into ordinary answers (measured from outside: after one
"I can't get the news: I work offline, with no internet.", Qwen2.5-0.5B answered each of
the next five questions "I can't get the …: I work offline", and refused a joke as "not
connected"). The real LLM, the real Conversation and skills; scripted ears and voice."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from models.country_data import facts_skill
from models.llama_responder import LlamaResponder
from models.load import open_responder
from models.locate import ModelError, locate
from pipeline.answer.llm import LlmOptions
from pipeline.conversation import Conversation
from pipeline.conversation_options import ConversationOptions
from pipeline.skills import Timers, default_skills
from pipeline.skills.offline import OfflineSkill
from pipeline.speaker import Speaker
from tests.fakes import TEST_VAD, FakeSynthesizer, FakeTranscriber, Mic, Workers

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

NEWS = "What's the latest news?"
ASKED = ["How many legs does a spider have?", "Which ocean is the largest?",
         "Who wrote Romeo and Juliet?", "Tell me a joke."]
DECLINE = re.compile(r"offline|no internet|not connected|can[’']?t get|cannot get|"
                     r"without (?:an )?internet", re.IGNORECASE)


@pytest.fixture(scope="module", params=["embedded", "qwen2.5-coder-0.5b"])
def responder(request: pytest.FixtureRequest) -> Iterator[LlamaResponder]:
    """The embedded model, and the 0.5B the leak was measured on where it is pulled."""
    try:
        path = locate("llm", None if request.param == "embedded" else request.param).path
    except ModelError as error:
        pytest.skip(str(error))
    opened = open_responder(path, LlmOptions())
    yield opened
    opened.close()


async def test_after_a_news_refusal_questions_and_a_joke_are_answered_not_refused(
    workers: Workers, responder: LlamaResponder,
) -> None:
    models = workers.models(FakeTranscriber(NEWS, *ASKED), responder, FakeSynthesizer())  # type: ignore[arg-type]
    options = ConversationOptions(vad=TEST_VAD, endpoint=None, partial_interval_s=None)
    skills = default_skills(timers=Timers(), store=None, extra=[facts_skill(), OfflineSkill()])
    conv = Conversation(models, Speaker(), options, skills=skills)
    async with Mic(conv) as mic:
        for n in range(1, len(ASKED) + 2):
            await mic.say()
            await mic.play_until(lambda n=n: len(conv.turns) == n, timeout=120)  # type: ignore[misc]
    refusal, *answers = conv.turns
    assert refusal.skill == "offline" and DECLINE.search(refusal.reply)
    for asked, turn in zip(ASKED, answers, strict=True):
        assert turn.skill is None, f"{asked!r} was answered by the {turn.skill} skill"
        assert turn.reply.strip(), f"{asked!r} got no answer"
        assert not DECLINE.search(turn.reply), f"{asked!r} → {turn.reply!r} copies the refusal"
