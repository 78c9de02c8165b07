"""`apace bench`'s summary and table: what a configuration's turns and stats add up to."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.bench import ConfigResult, TurnResult, report


def _turn(ttfa: float, *, cut: bool = False, held_out: bool = False) -> TurnResult:
    return TurnResult("q", "q", "a", ttfa, {"ttfa_server": ttfa - 200, "endpoint": 240},
                      cut_off=cut, held_out=held_out,
                      transport_ms={"mic_path": 80, "speaker_path": 120})


def test_summary_reports_percentiles_cutoffs_and_speculation_waste() -> None:
    result = ConfigResult("all-on", [], turns=[_turn(600), _turn(800), _turn(700)],
                          paused=[_turn(900, cut=True, held_out=True), _turn(900)])
    result.stats = {"engine": {"speculation": {"started": 9, "committed": 5, "cancelled": 4,
                                               "wasted_tokens": 12, "wasted_ms": 350.0}}}
    summary = result.summary()
    assert summary["turns"] == 3
    assert summary["ttfa_client"]["p50"] == 700
    assert summary["ttfa_server"]["p50"] == 500
    assert summary["false_cutoffs"] == 1 and summary["false_cutoffs_held_out"] == 1
    assert summary["false_cutoff_rate"] == 0.5
    assert summary["speculation"]["cancelled"] == 4


def test_report_prints_each_config_with_its_ratio_to_all_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    on = ConfigResult("all-on", [], turns=[_turn(500), _turn(500)])
    on.stats = {"engine": {"speculation": {"started": 3, "committed": 2, "cancelled": 1,
                                           "wasted_tokens": 7, "wasted_ms": 120.0}}}
    off = ConfigResult("all-off", ["--no-speculate"], turns=[_turn(1500), _turn(1500)])
    report([on, off], tmp_path)
    out = capsys.readouterr().out
    assert "x3.00 vs all-on" in out
    assert "3 started, 2 committed, 1 cancelled (7 tokens, 120 ms wasted)" in out
    assert (tmp_path / "bench.json").exists() and (tmp_path / "bench.png").exists()
