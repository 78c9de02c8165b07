"""The real LLM's prompt work per turn: prefill between turns, logits only for drafts, one
tokenization. Each of these changes how much is read before the first token, never what
is said."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from models.llama_responder import LlamaResponder
from models.load import open_responder
from models.locate import locate
from pipeline.answer.llm import LlmOptions, Message

pytestmark = pytest.mark.integration

QUESTIONS = ["What is the capital of France?", "How many days are there in a week?",
             "Who wrote Romeo and Juliet?", "What is the boiling point of water?"]
ASSISTANT_HEADER = "<|im_end|>\n<|im_start|>assistant\n"
"""What the embedded (ChatML) model's template puts between the user's words and a reply."""


@pytest.fixture
def responder() -> Iterator[LlamaResponder]:
    opened = open_responder(locate("llm").path, LlmOptions())
    yield opened
    opened.close()


def spy(obj: Any, name: str, record: Callable[..., object]) -> None:
    """Record each call of the method `name` of `obj` (on the instance), then make it."""
    method = getattr(obj, name)

    def recorded(*args: Any, **kwargs: Any) -> Any:
        record(*args, **kwargs)
        return method(*args, **kwargs)

    setattr(obj, name, recorded)


def evals(responder: LlamaResponder) -> list[tuple[int, bool]]:
    """(tokens evaluated, logits for all of them) of every llama eval from now on."""
    calls: list[tuple[int, bool]] = []
    spy(responder.llama, "eval",
        lambda tokens: calls.append((len(tokens), responder.llama._logits_all)))
    return calls


def converse(responder: LlamaResponder, *, prefill: bool) -> list[list[int]]:
    """Ask QUESTIONS in one conversation; each reply's prompt and generated tokens."""
    responder.warm([])
    history: list[Message] = []
    tokens = []
    for question in QUESTIONS:
        reply = "".join(responder.reply(history, question)).strip()
        tokens.append(list(responder.llama._input_ids))
        history += [Message("user", question), Message("assistant", reply)]
        if prefill:
            responder.prefill(history)
    return tokens


def user_turn_tokens(responder: LlamaResponder, question: str) -> int:
    """Tokens of the user's words and the assistant header: all a prefilled turn reads."""
    text = question + ASSISTANT_HEADER
    return len(responder.llama.tokenize(text.encode(), add_bos=False, special=True))


def first_exchange(responder: LlamaResponder) -> list[Message]:
    """A fresh conversation's first question and the model's reply to it, as history."""
    responder.warm([])
    return [Message("user", QUESTIONS[0]),
            Message("assistant", "".join(responder.reply([], QUESTIONS[0])).strip())]


def test_after_prefill_a_reply_reads_only_the_users_words_and_the_assistant_header(
    responder: LlamaResponder,
) -> None:
    history = first_exchange(responder)
    responder.prefill(history)
    prompt = responder.llama.tokenize(responder.prompt(history, QUESTIONS[1]).encode(),
                                      special=True)
    assert list(responder.llama._input_ids) == prompt[: responder.llama.n_tokens]
    calls = evals(responder)
    "".join(responder.reply(history, QUESTIONS[1]))
    assert calls[0][0] == user_turn_tokens(responder, QUESTIONS[1])


def test_reading_a_captions_words_ahead_leaves_only_the_rest_of_the_turn(
    responder: LlamaResponder,
) -> None:
    history = first_exchange(responder)
    responder.warm(history)  # the KV: up to where the next user message starts
    plain = responder.reply(history, QUESTIONS[2])
    plain_text, plain_tokens = "".join(plain), list(responder.llama._input_ids)
    responder.warm(history)
    responder.prefill(history, "Who wrote Romeo")  # the caption's settled words
    calls = evals(responder)
    assert "".join(responder.reply(history, QUESTIONS[2])) == plain_text
    assert list(responder.llama._input_ids) == plain_tokens
    assert calls[0][0] == user_turn_tokens(responder, " and Juliet?")


def test_a_caption_the_final_transcript_contradicts_costs_nothing_but_the_difference(
    responder: LlamaResponder,
) -> None:
    responder.warm([])
    plain = "".join(responder.reply([], QUESTIONS[1]))
    responder.warm([])
    responder.prefill([], "What is the")  # Whisper changed its mind about these words
    assert "".join(responder.reply([], QUESTIONS[1])) == plain


def test_a_template_that_rewrites_the_users_words_reads_nothing_ahead(
    responder: LlamaResponder,
) -> None:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    responder._template = ImmutableSandboxedEnvironment().from_string(
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] | upper }}"
        "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
        "{% endif %}")
    responder.warm([])
    start = list(responder.llama._input_ids)
    responder.prefill([], "Who wrote Romeo")
    assert list(responder.llama._input_ids) == start


def test_warm_ends_with_the_start_of_a_user_message(responder: LlamaResponder) -> None:
    responder.warm([])
    calls = evals(responder)
    "".join(responder.reply([], QUESTIONS[0]))
    assert calls[0][0] == user_turn_tokens(responder, QUESTIONS[0])


def test_replies_are_token_identical_with_and_without_prefill(
    responder: LlamaResponder,
) -> None:
    plain = converse(responder, prefill=False)
    assert converse(responder, prefill=True) == plain


def test_prefill_reads_the_trimmed_history_the_next_prompt_will_start_with() -> None:
    """Past the context budget the next prompt drops the oldest exchanges: prefill reads
    that prompt's start, not the untrimmed one."""
    responder = open_responder(locate("llm").path, LlmOptions(n_ctx=256, max_tokens=20))
    try:
        history = []
        for i in range(8):
            history += [Message("user", f"Tell me fact number {i} about the ocean."),
                        Message("assistant", "The ocean is deep, salty and full of life.")]
        responder.warm([])
        responder.prefill(history)
        assert responder.fit(history, QUESTIONS[0]) != history
        calls = evals(responder)
        "".join(responder.reply(history, QUESTIONS[0]))
        assert calls[0][0] == user_turn_tokens(responder, QUESTIONS[0])
    finally:
        responder.close()


def test_prefill_does_nothing_when_the_kv_is_not_reused() -> None:
    responder = open_responder(locate("llm").path, LlmOptions(reuse_kv=False))
    try:
        responder.warm([])
        held = responder.llama.n_tokens
        responder.prefill([Message("user", "Hi"), Message("assistant", "Hello!")])
        assert responder.llama.n_tokens == held
    finally:
        responder.close()


def test_a_drafted_reply_reads_its_prompt_without_logits_and_verifies_the_draft_with_them(
    responder: LlamaResponder,
) -> None:
    """Logits for every position are computed only from the first drafted tokens on."""
    responder.warm([])
    plain = "".join(responder.reply([], QUESTIONS[0]))
    responder.warm([])
    calls = evals(responder)
    assert "".join(responder.reply([], QUESTIONS[0], draft=plain)) == plain
    assert calls[0] == (user_turn_tokens(responder, QUESTIONS[0]), False)
    assert any(n > 1 and logits for n, logits in calls[1:]), calls
    assert responder.drafter is not None and responder.drafter.stats.accepted > 0


def test_a_reply_tokenizes_its_prompt_once(responder: LlamaResponder) -> None:
    history = [Message("user", QUESTIONS[0]), Message("assistant", "Paris.")]
    prompt = responder.prompt(history, QUESTIONS[1]).encode()
    texts: list[bytes] = []
    spy(responder.llama, "tokenize", lambda text, *_args, **_kwargs: texts.append(text))
    "".join(responder.reply(history, QUESTIONS[1]))
    assert texts.count(prompt) == 1
