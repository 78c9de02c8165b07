"""Clause splitting: the first clause early, then sentences, and text made speakable."""

from __future__ import annotations

import pytest

from pipeline.answer.clauses import ClauseOptions, ClauseSplitter, speakable, split_clauses
from pipeline.events import Clause


def texts(clauses: list[Clause]) -> list[str]:
    return [c.text for c in clauses]


def test_the_first_clause_is_cut_at_a_comma_once_it_has_enough_words() -> None:
    splitter = ClauseSplitter()
    assert splitter.feed("Sure, I") == []  # one word before the comma: too short
    (first,) = splitter.feed(" can do that,")  # after a plain word: no need to wait
    assert first == Clause("Sure, I can do that,", 0, ends_sentence=False)


def test_a_comma_after_a_digit_waits_for_the_next_token() -> None:
    splitter = ClauseSplitter()
    assert splitter.feed("It costs about 1,") == []  # "1,000"?
    assert texts(splitter.feed("000 dollars, I")) == ["It costs about 1,000 dollars,"]


def test_after_the_first_clause_text_is_cut_at_sentence_ends_only() -> None:
    clauses = list(split_clauses(["Yes, I think so, ", "well, maybe, if you like. ", "Bye."]))
    assert texts(clauses) == ["Yes, I think so,", "well, maybe, if you like.", "Bye."]
    assert [c.ends_sentence for c in clauses] == [False, True, True]


def test_clauses_are_numbered_in_order_from_zero() -> None:
    clauses = list(split_clauses(["One. Two. Three. Four."]))
    assert [c.index for c in clauses] == [0, 1, 2, 3]


def test_a_sentence_ending_a_plain_word_is_emitted_without_waiting_for_the_next_token() -> None:
    splitter = ClauseSplitter()
    assert texts(splitter.feed("Hello there.")) == ["Hello there."]
    assert splitter.feed("..") == []  # the rest of an ellipsis is not spoken
    assert texts(splitter.feed(" How are you?")) == ["How are you?"]


@pytest.mark.parametrize(("head", "rest"), [("It is 3.", "5 metres. "), ("Ask Dr.", " Smith. ")])
def test_a_mark_that_may_not_end_the_sentence_waits_for_the_next_token(head: str, rest: str) -> None:
    splitter = ClauseSplitter(ClauseOptions(early_first_clause=False))
    assert splitter.feed(head) == []
    assert texts(splitter.feed(rest)) == [(head + rest).strip()]


def test_flush_emits_the_unterminated_rest_as_a_sentence() -> None:
    splitter = ClauseSplitter()
    splitter.feed("It is ten o'clock")
    assert splitter.flush() == [Clause("It is ten o'clock", 0, ends_sentence=True)]
    assert splitter.flush() == []


@pytest.mark.parametrize("mark", ["!", "?", "...", "…", '."', ".)"])
def test_sentence_end_marks_and_closing_quotes_end_a_clause(mark: str) -> None:
    clauses = list(split_clauses([f"It really works{mark} Next one."]))
    assert texts(clauses) == [f"It really works{mark}", "Next one."]


@pytest.mark.parametrize("abbreviation", ["Dr.", "Mr.", "e.g.", "vs.", "etc."])
def test_an_abbreviation_period_does_not_end_the_sentence(abbreviation: str) -> None:
    clauses = list(split_clauses([f"Ask {abbreviation} Smith today. Then go."]))
    assert texts(clauses) == [f"Ask {abbreviation} Smith today.", "Then go."]


def test_list_numbers_and_decimals_do_not_end_a_sentence() -> None:
    clauses = list(split_clauses(["Step 1. is easy and 3.5 is a number. Done."]))
    assert texts(clauses) == ["Step 1. is easy and 3.5 is a number.", "Done."]


def test_a_sentence_longer_than_max_words_is_cut_at_its_next_comma() -> None:
    splitter = ClauseSplitter(ClauseOptions(max_words=8))
    assert texts(splitter.feed("First. ")) == ["First."]
    long = "one two three four five six seven eight nine, ten eleven "
    assert texts(splitter.feed(long)) == ["one two three four five six seven eight nine,"]
    assert texts(splitter.flush()) == ["ten eleven"]


def test_a_sentence_within_max_words_keeps_its_commas() -> None:
    splitter = ClauseSplitter(ClauseOptions(max_words=30))
    assert texts(splitter.feed("First. ")) == ["First."]
    assert splitter.feed("one two three, four five six, seven ") == []


def test_first_clause_min_words_is_configurable() -> None:
    splitter = ClauseSplitter(ClauseOptions(first_clause_min_words=1))
    assert texts(splitter.feed("Sure, thing")) == ["Sure,"]


@pytest.mark.parametrize("break_mark", [";", ":", " —", " -"])
def test_the_first_clause_may_end_at_any_comma_like_break(break_mark: str) -> None:
    clauses = list(split_clauses([f"Here is the thing{break_mark} it works well."]))
    assert clauses[0].text == f"Here is the thing{break_mark}"
    assert not clauses[0].ends_sentence


def test_any_chunking_of_the_stream_speaks_the_same_words_in_order() -> None:
    reply = (
        "Well, I think that it is a lovely day, really. Dr. Who said so; "
        "he also said: take an umbrella! Would you? Maybe, maybe not... See you."
    )
    expected = [word.rstrip(".") for word in reply.split()]
    for size in (1, 2, 3, 7, 50, len(reply)):
        pieces = [reply[i : i + size] for i in range(0, len(reply), size)]
        words = " ".join(texts(list(split_clauses(pieces)))).split()
        # Dots may differ: "not." is spoken at once when "..." comes as separate dots.
        assert [word.rstrip(".") for word in words] == expected, size


def test_a_clause_with_nothing_speakable_is_skipped_without_using_an_index() -> None:
    clauses = list(split_clauses(["Great. 🎉🎉. ** . Let us go."]))
    assert clauses == [Clause("Great.", 0, True), Clause("Let us go.", 1, True)]


def test_speakable_removes_markdown_emphasis_headings_and_code_marks() -> None:
    assert speakable("## Tip: use **bold** and `code`, _please_ ~~now~~") == (
        "Tip: use bold and code , please now"
    )


def test_speakable_keeps_the_text_of_a_markdown_link_and_drops_its_url() -> None:
    assert speakable("See [the docs](https://example.com/x) today.") == "See the docs today."


def test_speakable_removes_emoji_but_keeps_accents_and_dashes() -> None:
    assert speakable("Café 😀 — naïve… 🚀") == "Café — naïve…"


def test_speakable_is_empty_without_letters_or_digits() -> None:
    assert speakable("  ... !! 🎉 ") == ""
    assert speakable("") == ""


def test_speakable_folds_whitespace() -> None:
    assert speakable("  one\n\ttwo   three ") == "one two three"


def test_a_comma_less_first_sentence_is_cut_before_a_linking_word() -> None:
    """No comma in the first words: clause 1 ends before the first linking word that has
    three words before it, so Piper can start once 'to' is written, not at 'Mercury.'."""
    text = "The closest planet to the sun is Mercury. Yes."
    clauses = [c.text for c in split_clauses(w + " " for w in text.split())]
    assert clauses[0] == "The closest planet"
    assert " ".join(clauses) == text


def test_the_cut_comes_as_the_linking_word_is_written() -> None:
    """The cut is at the space before 'to': whatever 'to' becomes, the words before it
    are whole, so clause 1 does not wait for the token after it."""
    splitter = ClauseSplitter()
    assert splitter.feed("The closest planet") == []
    assert [c.text for c in splitter.feed(" to")] == ["The closest planet"]
    assert [c.text for c in splitter.feed("day is Mercury.")] == ["today is Mercury."]


def test_a_longer_first_clause_is_a_setting() -> None:
    """`--first-clause-words 7` (the default before): cut only once 7 words are in."""
    text = "The tallest mountain in the world is Mount Everest which stands tall. Yes."
    options = ClauseOptions(first_clause_max_words=7)
    clauses = [c.text for c in split_clauses((w + " " for w in text.split()), options)]
    assert clauses[0] == "The tallest mountain"
    assert clauses[1] == "in the world is Mount Everest which stands tall."


def test_a_first_sentence_without_a_late_linking_word_is_not_cut_before_its_end() -> None:
    for text in ("The solar system has 8 planets.", "Water boils at 100 degrees Celsius.",
                 "The answer is 42."):
        assert [c.text for c in split_clauses(w + " " for w in text.split())] == [text]


def test_the_first_clause_is_capped_at_four_words_but_not_after_a_number_or_lead_word() -> None:
    def cut(text: str) -> list[str]:
        capped = ClauseOptions(first_clause_cap_words=4)
        return [c.text for c in split_clauses((w + " " for w in text.split()), capped)]

    assert cut("The solar system has 8 planets.") == ["The solar system has", "8 planets."]
    # the word before the cut is a number or leads on: back one, or no cut at all
    assert cut("Water boils at 100 degrees Celsius.") == ["Water boils at 100 degrees Celsius."]
    assert cut("Gravity is approximately 9.81 m/s².") == ["Gravity is approximately 9.81 m/s²."]
    assert cut("It weighs about 5 tons.") == ["It weighs about 5 tons."]
    assert cut("Blue and yellow make green paint.") == ["Blue and yellow make", "green paint."]
    assert cut("Mount Everest stands really tall today.") == ["Mount Everest stands",
                                                         "really tall today."]


def test_the_cap_waits_for_the_next_word_to_begin() -> None:
    splitter = ClauseSplitter(ClauseOptions(first_clause_cap_words=4))
    assert splitter.feed("The solar system has ") == []
    assert [c.text for c in splitter.feed("8")] == ["The solar system has"]
    with pytest.raises(ValueError):
        ClauseOptions(first_clause_cap_words=-1)


def test_the_phrase_cut_applies_to_the_first_clause_only() -> None:
    text = "Sure. The tallest mountain in the world is Mount Everest which is tall."
    clauses = [c.text for c in split_clauses(w + " " for w in text.split())]
    assert clauses == ["Sure.", "The tallest mountain in the world is Mount Everest which is tall."]


def test_speakable_drops_tags_and_latex_but_not_signs() -> None:
    assert speakable(r"It is \(\frac{a}{b}\) here.") == "It is a b here."
    assert speakable('<function name="set timer"> <duration>10</duration>') == "10"
    assert speakable("5 < 7 and 9 > 3 costs $5") == "5 < 7 and 9 > 3 costs $5"
