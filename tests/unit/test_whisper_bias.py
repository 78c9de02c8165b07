"""The vocabulary-bias prompt: what Whisper's decoder reads before an utterance.

faster-whisper's own `get_prompt` lays the prompt out; a word-per-token fake tokenizer makes
the token budget countable by eye.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from faster_whisper import WhisperModel

from app.bench.asr import Heard, TierRun, asr_set, normalise, parse_tiers, report
from models.whisper import bias_prompt, fit_terms
from pipeline.listen.asr import DEFAULT_VOCABULARY, drop_repeats

SOT, SOT_PREV, NO_TIMESTAMPS = 50257, 50360, 50362


class WordTokenizer:
    """One token per whitespace-separated word; the same word always gets the same id."""

    sot_prev = SOT_PREV
    sot_sequence = (SOT,)
    no_timestamps = NO_TIMESTAMPS

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def encode(self, text: str) -> list[int]:
        return [self.ids.setdefault(word, 1000 + len(self.ids)) for word in text.split()]


class Model:
    """Just enough of WhisperModel for its real `get_prompt`."""

    max_length = 448
    get_prompt = WhisperModel.get_prompt


def prompt(vocabulary: str, context: str, budget: int = 64) -> tuple[list[int], WordTokenizer]:
    tokenizer = WordTokenizer()
    made = bias_prompt(Model(), tokenizer, vocabulary=vocabulary, context=context, budget=budget)
    return made, tokenizer


def test_no_vocabulary_and_no_context_is_exactly_the_plain_prompt() -> None:
    made, tokenizer = prompt("", "   ")
    assert made == Model().get_prompt(tokenizer, [], without_timestamps=True) == [SOT, NO_TIMESTAMPS]


def test_vocabulary_is_read_as_earlier_text_before_the_transcript_starts() -> None:
    made, tokenizer = prompt("timer, cups, Fahrenheit", "")
    assert made == [SOT_PREV, *tokenizer.encode("timer, cups, Fahrenheit"), SOT, NO_TIMESTAMPS]


def test_context_follows_the_vocabulary_as_the_previous_text() -> None:
    made, tokenizer = prompt("timer, cups", "Set a timer. Done.")
    words = tokenizer.encode("timer, cups Set a timer. Done.")
    assert made == [SOT_PREV, *words, SOT, NO_TIMESTAMPS]


def test_vocabulary_is_cut_at_a_comma_to_fit_the_budget() -> None:
    made, tokenizer = prompt("shopping list, convert units, tablespoons", "", budget=4)
    assert made == [SOT_PREV, *tokenizer.encode("shopping list, convert units"), SOT, NO_TIMESTAMPS]


def test_context_keeps_its_most_recent_tokens_within_what_the_vocabulary_leaves() -> None:
    made, tokenizer = prompt("cups", "one two three four five six", budget=4)
    assert made == [SOT_PREV, *tokenizer.encode("cups four five six"), SOT, NO_TIMESTAMPS]


def test_a_budget_the_vocabulary_fills_leaves_no_room_for_context() -> None:
    made, tokenizer = prompt("a b, c d", "context words", budget=4)
    assert made == [SOT_PREV, *tokenizer.encode("a b, c d"), SOT, NO_TIMESTAMPS]


def test_a_term_larger_than_the_budget_leaves_the_vocabulary_out() -> None:
    assert fit_terms(WordTokenizer().encode, "a very long phrase, b", 2) == ""
    made, tokenizer = prompt("a very long phrase", "now", budget=2)
    assert made == [SOT_PREV, *tokenizer.encode("now"), SOT, NO_TIMESTAMPS]


def test_the_default_vocabulary_is_short() -> None:
    assert len(DEFAULT_VOCABULARY.split()) <= 25


def test_the_spoken_set_holds_a_third_out() -> None:
    lines = asr_set()
    held = [line for line in lines if line.held_out]
    assert len(lines) >= 40
    assert 0.25 <= len(held) / len(lines) <= 0.45
    assert not any(line.held_out for line in lines[: len(lines) - len(held)])


@pytest.mark.parametrize(("said", "written"), [
    ("What is fifteen percent of eighty?", "What is 15% of 80?"),
    ("Remind me to call Sarah at six thirty.", "remind me to call sarah at 6:30"),
    ("How many grams are in two cups of flour?", "How many grams are in 2 cups of flour"),
    ("Convert seventy degrees Fahrenheit to Celsius.", "Convert 70°F to Celsius."),
    ("Set a timer for forty five minutes.", "Set a timer for forty-five minutes."),
])
def test_normalise_scores_numbers_as_words_and_digits_alike(said: str, written: str) -> None:
    assert normalise(said) == normalise(written)


def test_normalise_keeps_a_wrong_word_wrong() -> None:
    assert normalise("How many cups are in a quart?") != normalise("How many cuts are in a quart?")


def test_parse_tiers_refuses_what_is_not_a_whisper_folder(tmp_path: Path) -> None:
    (tmp_path / "model.bin").write_bytes(b"x")
    assert parse_tiers(f"mine={tmp_path}") == {"mine": tmp_path}
    with pytest.raises(ValueError, match=r"no model\.bin"):
        parse_tiers(f"other={tmp_path / 'nope'}")
    with pytest.raises(ValueError, match="NAME=DIR"):
        parse_tiers("no-such-tier")


def test_report_puts_tiers_and_bias_side_by_side() -> None:
    def heard(hypothesis: str, voice: str, held_out: bool) -> Heard:
        return Heard("set a timer", voice, held_out, hypothesis, 0.0, 100.0, 50.0, 2.0)

    off = TierRun("tiny", bias=False, heard=[heard("set a tiger", "v1", False),
                                            heard("set a timer", "v2", True)], phantoms=["Okay."])
    on = TierRun("tiny", bias=True, heard=[heard("set a timer", "v1", False),
                                          heard("set a timer", "v2", True)], phantoms=[""])
    table = report([off, on]).splitlines()
    row_off = next(line for line in table if line.startswith("tiny bias off"))
    row_on = next(line for line in table if line.startswith("tiny bias on"))
    assert row_off.split()[3:6] == ["16.7%", "0.0%", "33.3%"]  # all, held-out, tuned
    assert row_on.split()[3:6] == ["0.0%", "0.0%", "0.0%"]
    assert row_off.split()[-1] == "1" and row_on.split()[-1] == "0"  # phantoms
    assert off.summary()["wer_by_voice"] == {"v1": 0.3333, "v2": 0.0}


@pytest.mark.parametrize(("heard", "kept"), [
    ("What about Italy? What about Italy?", "What about Italy?"),
    ("How do you spell necessary? How do you spell necessary? How do",
     "How do you spell necessary?"),
    ("What is it? It is a cat.", "What is it? It is a cat."),
    ("No. No, thanks.", "No. No, thanks."),
    ("Set a timer for 3.5 minutes.", "Set a timer for 3.5 minutes."),
    ("Pause my timer, pause my timer.", "Pause my timer."),  # a clause said again
    ("Pause my timer, pause my timer, pause my timer", "Pause my timer"),
    ("Add eggs, eggs and milk.", "Add eggs, eggs and milk."),
    ("What is 100,100?", "What is 100,100?"),
])
def test_a_sentence_whisper_says_twice_is_kept_once(heard: str, kept: str) -> None:
    assert drop_repeats(heard) == kept


@pytest.mark.parametrize(("heard", "kept"), [
    ("calculate 8% of 250," + "000," * 40, "calculate 8% of 250"),
    ("Set a timer for 250,000 seconds.", "Set a timer for 250,000 seconds."),  # a real number
    ("What is 1,000,000,000 divided by 10?", "What is 1,000,000,000 divided by 10?"),
    ("What is the the the the the capital of France?", "What is the capital of France?"),
    ("Bye bye.", "Bye bye."),
    # A phrase looped under the bias prompt, its last copy cut by the token cap.
    ("pause to hours timer pause to hours timer pause to hours timer pause to hours",
     "pause to hours timer"),
    ("one two, one two, one two, three", "one two, three"),
    ("Ha ha ha.", "Ha ha ha."),
])
def test_decoder_loops_are_cut_and_real_numbers_kept(heard: str, kept: str) -> None:
    assert drop_repeats(heard) == kept
