"""A context of its own per conversation copies the prompt start's KV from the first
context that read it (models/prompt_state.py), and answers exactly as if it had read it."""

from __future__ import annotations

import pytest

from models.load import open_responder
from models.locate import locate
from models.prompt_state import PromptState
from pipeline.answer.llm import LlmOptions

pytestmark = pytest.mark.integration


class Counting(PromptState):
    def __init__(self) -> None:
        super().__init__()
        self.restored = 0

    def restore(self, llama, tokens):  # type: ignore[no-untyped-def]
        done = super().restore(llama, tokens)
        self.restored += done
        return done


def test_a_new_context_copies_the_prompt_start_and_answers_the_same() -> None:
    path, options = locate("llm").path, LlmOptions(max_tokens=24)
    states = (Counting(), Counting())
    first = open_responder(path, options, None, states)
    second = open_responder(path, options, None, states)
    alone = open_responder(path, options)  # reads everything itself
    try:
        first.warm([])
        assert states[0].stored and states[0].restored == 0
        second.warm([])
        assert states[0].restored == 1
        assert list(second.llama._input_ids) == states[0].tokens
        alone.warm([])
        question = "What is the capital of France?"
        replies = ["".join(r.reply([], question)) for r in (second, alone, first)]
        assert replies[0] == replies[1] == replies[2] and replies[0].strip()
    finally:
        for responder in (first, second, alone):
            responder.close()


def test_a_different_prompt_start_is_read_not_copied() -> None:
    path = locate("llm").path
    states = (Counting(), Counting())
    first = open_responder(path, LlmOptions(), None, states)
    other = open_responder(path, LlmOptions(system_prompt="You are a pirate."), None, states)
    try:
        first.warm([])
        other.warm([])
        assert states[0].restored == 0
        assert list(other.llama._input_ids) != states[0].tokens
    finally:
        first.close()
        other.close()
