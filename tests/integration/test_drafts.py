"""Draft-and-verify on the real LLM: drafts change speed, never what is said."""

from __future__ import annotations

import pytest

from app.bench.utterances import questions
from models.load import open_responder
from models.locate import locate
from pipeline.answer.llm import LlmOptions

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def plain_replies() -> dict[str, str]:
    responder = open_responder(locate("llm").path, LlmOptions(drafts=False))
    try:
        return {q: "".join(responder.reply([], q)) for q in questions()}
    finally:
        responder.close()


@pytest.fixture
def drafting():
    responder = open_responder(locate("llm").path, LlmOptions(drafts=True))
    yield responder
    responder.close()


def test_a_wrong_draft_is_rejected_and_the_output_is_plain_decoding(
    drafting, plain_replies: dict[str, str]
) -> None:
    """Every emitted token is the target model's choice: a draft that is nonsense for the
    question is rejected and the answer matches plain greedy decoding."""
    agree = 0
    for question, plain in plain_replies.items():
        out = "".join(drafting.reply([], question, draft="Purple bananas sing at midnight."))
        agree += out == plain
    assert drafting.drafter.stats.accepted <= drafting.drafter.stats.proposed // 4
    assert agree >= len(plain_replies) - 1, f"{agree}/{len(plain_replies)} agree"


def test_the_right_draft_is_mostly_accepted_and_agrees_with_plain_decoding(
    drafting, plain_replies: dict[str, str]
) -> None:
    """A cached reply as draft: most tokens are accepted in batches, and the output still
    matches plain decoding except where batched evaluation breaks a numerical tie."""
    agree = 0
    for question, plain in plain_replies.items():
        agree += "".join(drafting.reply([], question, draft=plain)) == plain
    stats = drafting.drafter.stats
    assert stats.acceptance is not None and stats.acceptance > 0.6, stats
    assert agree >= len(plain_replies) * 0.6, f"{agree}/{len(plain_replies)} agree"


def test_a_draft_is_verified_deep_into_a_long_conversation(drafting) -> None:
    """Past 512 tokens of context (llama-cpp-python's batch size) a drafted reply still
    works: its logits buffer must cover the whole context, not one batch."""
    from pipeline.answer.llm import Message

    history = []
    for i in range(12):
        history += [Message("user", f"Tell me fact number {i} about the ocean, please."),
                    Message("assistant", "The ocean covers most of the Earth and is very "
                                         "deep, salty and full of life of many kinds.")]
    prompt_tokens = len(drafting.llama.tokenize(drafting.prompt(history, "Hi").encode()))
    assert prompt_tokens > 600
    out = "".join(drafting.reply(history, "What is the capital of France?",
                                 draft="The capital of France is Paris."))
    assert out.strip()


def test_a_draft_model_with_the_same_vocabulary_drafts_every_reply(
    plain_replies: dict[str, str],
) -> None:
    """The draft-model source, with the LLM itself as its own draft model (the smallest
    shipped): its greedy guesses are the target's own choices except where the target's
    repeat penalty steers it (measured 101/132 accepted), and the output is the target's
    (up to batched-evaluation ties)."""
    path = locate("llm").path
    responder = open_responder(path, LlmOptions(drafts=False, draft_model=str(path)))
    try:
        agree = sum("".join(responder.reply([], q)) == plain for q, plain in plain_replies.items())
        stats = responder.drafter.stats
    finally:
        responder.close()
    assert stats.proposed > 50 and stats.acceptance is not None and stats.acceptance > 0.65, stats
    assert agree >= len(plain_replies) * 0.6, f"{agree}/{len(plain_replies)} agree"


def test_a_draft_model_must_share_the_vocabulary(tmp_path) -> None:
    from models.locate import ModelError

    not_gguf = tmp_path / "draft.gguf"
    not_gguf.write_bytes(b"NOPE" + b"\0" * 64)
    with pytest.raises(ModelError, match="GGUF"):
        open_responder(locate("llm").path, LlmOptions(draft_model=str(not_gguf)))
