"""Turn timeline: one clock, first stamp wins, and the waterfall's bars add up."""

from __future__ import annotations

import itertools

import pytest

from pipeline import timeline as timeline_module
from pipeline.timeline import (
    ASR_FINAL,
    ENDPOINT,
    FIRST_CLAUSE,
    SPEECH_END,
    TTFA_SERVER,
    TTFT,
    TTUA,
    Timeline,
)


def make(**offsets_ms: float) -> Timeline:
    """A timeline with speech end at t=100 s and each stamp `offset` ms after it."""
    timeline = Timeline()
    timeline.stamp(SPEECH_END, 100.0)
    for name, ms in offsets_ms.items():
        timeline.stamp(name, 100.0 + ms / 1000)
    return timeline


def test_the_first_stamp_of_a_name_wins_and_is_returned_again() -> None:
    timeline = Timeline()
    assert timeline.stamp(TTFT, 5.0) == 5.0
    assert timeline.stamp(TTFT, 9.0) == 5.0
    assert timeline.stamps[TTFT] == 5.0


def test_stamp_without_a_time_uses_the_pipeline_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timeline_module, "now", lambda: 42.5)
    timeline = Timeline()
    assert timeline.stamp(ASR_FINAL) == 42.5
    assert timeline.has(ASR_FINAL)
    assert not timeline.has(TTFT)


def test_ms_is_measured_from_the_end_of_speech() -> None:
    timeline = make(endpoint=200, asr_final=260)
    assert timeline.ms(ENDPOINT) == pytest.approx(200)
    assert timeline.ms(ASR_FINAL) == pytest.approx(260)


def test_ms_is_none_for_a_stage_not_reached_or_without_speech_end() -> None:
    assert make(endpoint=200).ms(TTFT) is None
    timeline = Timeline()
    timeline.stamp(TTFT, 3.0)
    assert timeline.ms(TTFT) is None


def test_relative_ms_lists_only_reached_metrics_rounded_to_a_tenth() -> None:
    timeline = make(endpoint=200.04, ttft=412.36)
    assert timeline.relative_ms() == {ENDPOINT: 200.0, TTFT: 412.4}


def test_stages_tile_the_axis_and_sum_to_the_time_to_first_audio() -> None:
    timeline = make(endpoint=200, asr_final=260, ttft=400, first_clause=450, ttfa_server=520)
    stages = timeline.stages()
    assert [s.name for s in stages] == [ENDPOINT, ASR_FINAL, TTFT, FIRST_CLAUSE, TTFA_SERVER]
    assert stages[0].start_ms == 0
    assert all(a.end_ms == b.start_ms for a, b in itertools.pairwise(stages))
    assert [round(s.ms) for s in stages] == [200, 60, 140, 50, 70]
    assert sum(s.ms for s in stages) == pytest.approx(timeline.ms(TTFA_SERVER))


def test_stages_follow_time_order_when_speculation_finishes_asr_before_the_endpoint() -> None:
    timeline = make(asr_final=150, ttft=180, endpoint=200, first_clause=230, ttfa_server=260)
    stages = timeline.stages()
    assert [s.name for s in stages] == [ASR_FINAL, TTFT, ENDPOINT, FIRST_CLAUSE, TTFA_SERVER]
    assert sum(s.ms for s in stages) == pytest.approx(260)


def test_stages_leave_out_stamps_after_the_chosen_end() -> None:
    timeline = make(endpoint=200, ttft=400, ttfa_server=500, ttua=900)
    assert [s.name for s in timeline.stages(TTFT)] == [ENDPOINT, TTFT]
    assert TTUA not in [s.name for s in timeline.stages()]


def test_stages_are_empty_until_the_end_stamp_is_reached() -> None:
    assert make(endpoint=200, ttft=300).stages() == []
