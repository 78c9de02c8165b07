"""With the real 0.5B (the tier that takes tools): words that hold a tool's keyword but ask
for no tool are answered in words, in one LLM pass. Told not to call, the 0.5B wrote
'```json name: set_timer' or '<tools> <function name="set_timer">' to "How many days are
there in a" (heard: "Sorry, I didn't catch that." 2 s after the speech), and "The function
timer status returns the number of days left on the timers" when the words trailed off."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from models.llama_responder import LlamaResponder
from models.load import open_responder
from models.locate import ModelError, locate
from pipeline.answer.llm import LlmOptions
from pipeline.answer.reply import NOT_CAUGHT, Reply
from pipeline.answer.tools import TOOLS
from pipeline.timeline import TTFT
from tests.fakes import Workers
from tests.integration import committed_reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TOOL_TALK = re.compile("|".join([r"function", r"\btools?\b", r"[{}<>`_\[\]]", *(
    tool["function"]["name"].replace("_", "[ _]?") for tool in TOOLS)]), re.IGNORECASE)
"""A tool's name, spaced or not, the words function and tool, and what calls are made of."""


@pytest.fixture(scope="module")
def responder() -> Iterator[LlamaResponder]:
    try:
        path = locate("llm", "qwen2.5-coder-0.5b").path
    except ModelError as error:
        pytest.skip(str(error))
    opened = open_responder(path, LlmOptions())
    assert opened.tools
    opened.warm([])
    yield opened
    opened.close()


async def ask(workers: Workers, responder: LlamaResponder, question: str) -> Reply:
    reply = await committed_reply.ask(workers, responder, question)
    print(f"{question!r}: {reply.text!r} (TTFT {reply.timeline.ms(TTFT):.0f} ms, {reply.passes} pass)")
    return reply


@pytest.mark.parametrize("question", [
    "How many days are there in a",
    "How many days are there in a...",
    "What is the time difference between London and Paris",
    "How many minutes does it take to boil an egg",
])
async def test_a_tool_keyword_without_a_tool_request_is_answered_in_words_in_one_pass(
    workers: Workers, responder: LlamaResponder, question: str,
) -> None:
    reply = await ask(workers, responder, question)
    assert reply.skill is None
    assert reply.text.strip() and reply.text != NOT_CAUGHT
    assert not TOOL_TALK.search(reply.text), reply.text
    assert reply.passes == 1


def test_a_reply_told_not_to_call_can_open_no_call_and_still_end(responder: LlamaResponder) -> None:
    llama, bias = responder.llama, responder._no_calls()
    for opening in (b"<tool_call>", b"<tools>", b"```json", b"{", b' {"', b" json", b"_timer",
                    b" function", b" tools"):
        first = llama.tokenize(opening, add_bos=False, special=True)[0]
        assert bias.get(first) == -100.0, opening
    ends = llama.tokenize(b"<|im_end|>", add_bos=False, special=True)
    assert llama.token_eos() not in bias and not set(ends) & set(bias)
    assert not any(llama.tokenize(w, add_bos=False)[0] in bias for w in (b" The", b" days", b" 365"))
