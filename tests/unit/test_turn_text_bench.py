"""The text turn detector's bench (app/bench/turn_text.py): its texts and thresholds."""

from __future__ import annotations

from app.bench import turn_text
from app.bench.turn_text import fast_threshold, fragments_of, paused_heads, unfinished_threshold


def test_fragments_are_turns_cut_before_their_last_words_and_closed_as_whisper_closes_them(
) -> None:
    assert fragments_of(["What is the capital of Spain?"]) == [
        "What is the capital of?", "What is the capital?", "What is the?"]


def test_a_cut_that_is_a_whole_request_is_no_fragment() -> None:
    assert fragments_of(["How are you today?", "Thank you very much."]) == [
        "How are?", "Thank you very."]


def test_a_paused_question_is_cut_after_its_pause_word() -> None:
    assert paused_heads([("Set a timer for ten minutes.", "for")]) == ["Set a timer for."]


def test_the_fast_threshold_lets_through_no_more_fragments_than_asked() -> None:
    fragments = [-3.0, -7.04, -9.0]  # a threshold on the 0.1 grid, above the one let out
    assert fast_threshold(fragments, 1) == -7.0
    assert sum(f >= fast_threshold(fragments, 1) for f in fragments) == 1
    assert sum(f >= fast_threshold(fragments, 0) for f in fragments) == 0


def test_the_unfinished_threshold_holds_back_no_more_finished_turns_than_asked() -> None:
    finished = [-12.0, -8.76, -2.0]
    assert unfinished_threshold(finished, 1) == -8.8
    assert sum(f <= unfinished_threshold(finished, 1) for f in finished) == 1


def test_the_bench_never_reads_the_blind_conversations(monkeypatch: object) -> None:
    read: list[str] = []
    from pathlib import Path

    original = Path.read_text

    def spy(self: Path, *args: object, **kwargs: object) -> str:
        read.append(self.name)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", spy)  # type: ignore[attr-defined]
    splits = turn_text.splits()
    assert read and not any("blind" in name for name in read)
    assert [s.name for s in splits] == ["tuned", "held-out"]
    assert not set(splits[0].finished) & set(splits[1].finished)
