"""pipeline.answer.integrity: history the LLM reads, the copy guard, the spoken-length budget."""

from __future__ import annotations

import itertools

import pytest

from pipeline.answer.integrity import (
    CopyGuard,
    IntegrityOptions,
    earlier_replies,
    is_offer,
    prompt_history,
    sentence_budget,
    window_start,
    word_budget,
)
from pipeline.answer.llm import Message

STUCK = ("I'm sorry for any inconvenience, but as a voice assistant, I don't have the ability "
         "to access weather data. However, you")


def exchange(user: str, assistant: str, interrupted: bool = False) -> list[Message]:
    return [Message("user", user), Message("assistant", assistant, interrupted=interrupted)]


def feed_tokens(guard: CopyGuard, text: str) -> str:
    """Feed `text` a word at a time, as a tokenizer would split it; returns what was released."""
    out = ""
    for i, word in enumerate(text.split(" ")):
        out += guard.feed(word if i == 0 else " " + word)
    return out + guard.finish()


def test_interrupted_exchanges_are_left_out_of_the_prompt_question_and_all() -> None:
    history = exchange("weather?", STUCK, interrupted=True) + exchange("hi", "Hello!")
    assert prompt_history(history, IntegrityOptions()) == exchange("hi", "Hello!")


def test_interrupted_replies_are_kept_when_asked() -> None:
    history = exchange("weather?", STUCK, interrupted=True)
    assert prompt_history(history, IntegrityOptions(keep_interrupted=True)) == history


def test_the_prompt_keeps_only_the_newest_exchanges() -> None:
    history = [m for i in range(6) for m in exchange(f"q{i}", f"a{i}")]
    kept = prompt_history(history, IntegrityOptions(max_exchanges=2))
    assert kept == exchange("q4", "a4") + exchange("q5", "a5")
    assert prompt_history(history, IntegrityOptions(max_exchanges=0)) == []


@pytest.mark.parametrize("exchanges", range(1, 13))
def test_a_follow_up_always_reads_the_exchange_it_follows(exchanges: int) -> None:
    """"When was he born?" after "Who wrote Romeo and Juliet?": however far the window has
    moved, the exchange just before is in the prompt, whole and last."""
    history = [m for i in range(exchanges - 1) for m in exchange(f"q{i}", f"a{i}")]
    history += exchange("Who wrote Romeo and Juliet?", "William Shakespeare wrote it.")
    kept = prompt_history(history, IntegrityOptions())
    assert kept[-2:] == exchange("Who wrote Romeo and Juliet?", "William Shakespeare wrote it.")


@pytest.mark.parametrize("most", [1, 2, 3, 4, 6])
def test_the_history_window_moves_in_steps_of_half_its_size(most: int) -> None:
    """Between ceil(most/2) and `most` exchanges are kept, the newest always; the window's
    start never goes back and stays put for ceil(most/2) turns at a time, so the prompt's
    prefix (and the KV the LLM read for it) holds for that long."""
    step = (most + 1) // 2
    starts = [window_start(n, most) for n in range(40)]
    for n, start in enumerate(starts):
        assert (start == 0) if n <= most else (most - step + 1 <= n - start <= most)
    moves = [n for n in range(1, 40) if starts[n] != starts[n - 1]]
    assert all(b - a == step for a, b in itertools.pairwise(moves))
    assert starts == sorted(starts)


def test_a_reply_that_follows_an_earlier_one_is_a_copy_and_nothing_of_it_is_released() -> None:
    guard = CopyGuard([STUCK])
    released = feed_tokens(guard, STUCK.replace("weather", "temperature"))
    assert guard.copied is not None and guard.copied.startswith("i'm sorry for any")
    assert released == ""


def test_a_reply_that_parts_from_earlier_ones_is_released_whole() -> None:
    guard = CopyGuard(["The capital of France is Paris."])
    released = feed_tokens(guard, "The capital of Germany is Berlin.")
    assert guard.copied is None
    assert released == "The capital of Germany is Berlin."


def test_text_is_held_only_while_it_could_still_be_a_copy() -> None:
    guard = CopyGuard(["The capital of France is Paris."])
    assert guard.feed("The") == ""
    assert guard.feed(" capital") == ""
    assert guard.feed(" of") == ""
    assert guard.feed(" Spain") == "The capital of Spain"
    assert guard.feed(" is") == " is"


def test_a_partly_written_word_that_departs_releases_at_once() -> None:
    guard = CopyGuard(["The capital of France is Paris."])
    guard.feed("The capital of")
    assert guard.feed(" Fin") == "The capital of Fin"


def test_a_short_reply_that_is_all_of_an_earlier_one_is_a_copy_at_its_end() -> None:
    guard = CopyGuard(["A spider has eight legs."])
    assert feed_tokens(guard, "A spider has eight legs.") == ""
    assert guard.copied == "a spider has eight legs"


def test_short_replies_are_not_guarded() -> None:
    guard = CopyGuard(["You're welcome!"])
    assert feed_tokens(guard, "You're welcome!") == "You're welcome!"
    assert guard.copied is None


def test_replies_to_the_same_question_asked_again_are_not_counted_as_earlier() -> None:
    history = exchange("What is the capital of France?", "Paris is the capital.")
    history += exchange("How are you?", "I am fine, thank you for asking.")
    assert earlier_replies(history, "what is the capital of france") == [
        "I am fine, thank you for asking."]


@pytest.mark.parametrize(("question", "budget"), [
    ("What is the capital of France?", 2),
    ("Tell me a story about a dragon.", 4),
    ("Can you explain how rainbows form?", 4),
    ("How do I boil an egg?", 4),
])
def test_spoken_replies_get_two_sentences_unless_more_is_asked_for(question: str, budget: int) -> None:
    assert sentence_budget(question, IntegrityOptions()) == budget


def test_bad_budgets_are_refused() -> None:
    with pytest.raises(ValueError, match="budgets"):
        IntegrityOptions(max_sentences=0)


def test_an_ordinary_reply_has_a_word_budget_and_one_asked_for_more_the_long_one() -> None:
    options = IntegrityOptions()
    assert word_budget("What is the capital of France?", options) == options.reply_words
    assert word_budget("Tell me a story about a dragon.", options) == options.max_words
    assert word_budget("Tell me that joke.", options) == options.max_words  # its punchline
    assert word_budget("Who wrote Hamlet?", IntegrityOptions(reply_words=0)) == options.max_words
    with pytest.raises(ValueError):
        IntegrityOptions(reply_words=-1)


@pytest.mark.parametrize("sentence", [
    "What can I do for you?", "How else can I help?", "Is there anything else?",
    "If you have any more questions, feel free to ask.", "Let me know if you need more.",
    "Feel free to ask!", "I'm happy to help.", "Hope this helps!",
])
def test_offers_of_more_help_are_told(sentence: str) -> None:
    assert is_offer(sentence)


@pytest.mark.parametrize("sentence", [
    "It is in France.", "What a lovely question.", "If it rains, take an umbrella.",
    "Anything can happen.", "Helping others is good.",
])
def test_answers_are_not_offers(sentence: str) -> None:
    assert not is_offer(sentence)
