"""With the real embedded LLM: asked to change a running timer, apace either really
changes it (a skill did) or says nothing that claims it did (the LLM answered)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime

import pytest

from models.llama_responder import LlamaResponder
from models.load import open_responder
from models.locate import locate
from pipeline.answer.claims import claims_action
from pipeline.answer.llm import LlmOptions
from pipeline.skills import Timers
from pipeline.timeline import now
from tests.fakes import Workers
from tests.integration.committed_reply import ask

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def responder() -> Iterator[LlamaResponder]:
    opened = open_responder(locate("llm").path, LlmOptions())
    yield opened
    opened.close()


def pizza_timer() -> Timers:
    timers = Timers()
    timers.add("timer", now() + 600, "pizza timer", "pizza", datetime.now().astimezone(),
               duration_s=600)
    return timers


@pytest.mark.parametrize("question", [
    "Pause the pizza timer.",
    "Please put the pizza timer on hold.",
    "Could you stop the pizza timer for a moment?",
    "Let the pizza timer sleep for a bit.",
    "Freeze the pizza countdown.",
])
async def test_a_pause_request_is_done_or_not_claimed(
    workers: Workers, responder: LlamaResponder, question: str,
) -> None:
    timers = pizza_timer()
    reply = await ask(workers, responder, question, timers)
    paused = [t.paused for t in timers.active()] == [True]
    if reply.skill is None:  # the LLM answered: it may not say the timer was paused
        assert not claims_action(reply.text, question), reply.text
        assert not re.search(r"\b(?:timer|is|was|been|now|i've|i have)\s+paused\b", reply.text.lower())
    assert paused or not claims_action(reply.text, question), reply.text
    if question == "Pause the pizza timer.":
        assert paused and reply.skill is not None and reply.skill.skill == "timer"
