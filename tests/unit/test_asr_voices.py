"""`python -m app.bench.asr_voices`: its word error arithmetic (the spoken set is
test_turn_audio's, which checks the blind split is never read)."""

from __future__ import annotations

from app.bench.asr_voices import edits, words


def test_words_are_lower_case_letters_and_digits_and_hyphens_split() -> None:
    assert words("Twenty-one, please! It's 5%.") == ["twenty", "one", "please", "its", "5"]


def test_edits_count_substitutions_insertions_and_deletions() -> None:
    said = words("how many hours are in a day")
    assert edits(said, said) == 0
    assert edits(said, words("how many hours are we today")) == 3  # in→we, a→today, -day
    assert edits(said, []) == len(said)
    assert edits([], said) == len(said)

