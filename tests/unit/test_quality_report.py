"""`apace bench --quality`'s summary, table and files: what scored turns add up to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.bench.quality import parse_compare
from app.bench.quality_report import (
    QualityResult,
    TurnOutcome,
    load_table,
    report,
    slow_turns,
    summarise,
    table,
    useful,
    wrong_turns,
)
from pipeline.quality import TurnScore


def _turn(right: bool | None, *, ttfa: float | None = 600.0, held_out: bool = False,
          repeat: bool = False, echo: bool = False, refusal: bool = False,
          expect_refusal: bool | None = None, reply: str = "Paris.", spoken_s: float = 1.0,
          sentences: int = 1, skill: str | None = None) -> TurnOutcome:
    reasons = () if right is not False else ("no accepted answer",)
    score = TurnScore(right=right, repeat=repeat, echo=echo, refusal=refusal, spoken_s=spoken_s,
                      sentences=sentences, reasons=reasons)
    return TurnOutcome("c", 1, "What is the capital of France?", score, held_out=held_out,
                       expect_refusal=expect_refusal, reply=reply, skill=skill,
                       ttfa_client_ms=ttfa, ttfa_server_ms=None if ttfa is None else ttfa - 150)


def _result() -> QualityResult:
    return QualityResult("default", [], turns=[
        _turn(True, ttfa=500, spoken_s=1.0, skill="math"),
        _turn(False, ttfa=700, repeat=True, spoken_s=3.0, sentences=2),
        _turn(True, ttfa=900, refusal=True, expect_refusal=True, spoken_s=2.0),
        _turn(False, ttfa=None, refusal=False, expect_refusal=True, reply=""),
        _turn(None, ttfa=600, echo=True, spoken_s=4.0, sentences=3),
        _turn(True, held_out=True, ttfa=800, spoken_s=2.0),
        _turn(False, held_out=True, ttfa=1000, refusal=True, expect_refusal=False,
              spoken_s=2.0),
    ], errors=["'x': ConnectionError"])


def test_summary_counts_right_over_turns_with_a_rule_and_held_out_apart() -> None:
    s = summarise(_result())
    assert s["turns"] == 7 and s["scored"] == 6 and s["right"] == 3 and s["right_pct"] == 50.0
    assert s["held_out"] == {"scored": 2, "right": 1, "right_pct": 50.0, "useful": 1,
                             "useful_pct": 50.0}
    assert s["tuned"] == {"scored": 4, "right": 2, "right_pct": 50.0, "useful": 2,
                          "useful_pct": 50.0}
    assert (s["repeats"], s["echoes"], s["no_reply"], s["skill_turns"]) == (1, 1, 1, 1)
    assert (s["refusals_ok"], s["refusals_due"], s["false_refusals"]) == (1, 2, 1)
    assert s["spoken_s_p50"] == 2.0  # the turn without a reply does not count
    assert s["sentences_p50"] == 1.0
    assert s["ttfa_client"]["p50"] == 750.0 and s["ttfa_server"]["p50"] == 600.0
    assert s["ttfa_right"]["p50"] == 800.0  # 500, 900, 800: the right turns' alone
    assert s["errors"] == 1


def test_a_configuration_with_no_scored_turns_reports_dashes() -> None:
    s = summarise(QualityResult("empty", []))
    assert s["right_pct"] is None and "ttfa_client" not in s
    row = table({"empty": s})[1]
    assert row.split() == ["empty", "0", "-", "-", "-", "-", "-", "-", "0", "0", "0/0", "-", "-",
                           "-", "-", "-"]


def test_report_prints_a_row_per_config_and_the_wrong_turns_and_writes_json_and_png(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    faster = QualityResult("qwen0.5", ["--llm-model", "q.gguf"],
                           turns=[_turn(True, ttfa=1000), _turn(True, ttfa=1200)])
    report([_result(), faster], tmp_path)
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.startswith(("default ", "qwen0.5 "))}
    assert rows["default"][:11] == ["default", "7", "50.0", "50.0", "-", "50.0", "50.0", "-", "1",
                                    "1", "1/2"]
    # Both right, but only the first was heard within a second: useful 50 %, right 100 %.
    assert rows["qwen0.5"][:6] == ["qwen0.5", "2", "50.0", "-", "-", "100.0"]
    assert "1100/1190" in rows["qwen0.5"]
    assert "qwen0.5: 1 replies heard after 1000 ms" in out
    assert "default: 3 of 7 turns wrong" in out
    assert "wrong c#1 'What is the capital of France?' → 'Paris.': no accepted answer" in out
    assert "error: 'x': ConnectionError" in out
    data = json.loads((tmp_path / "bench_quality.json").read_text())
    assert data["summaries"]["qwen0.5"]["right_pct"] == 100.0
    assert data["configs"][0]["turns"][1]["score"]["repeat"] is True
    assert (tmp_path / "bench_quality.png").stat().st_size > 1000


def test_compare_specs_become_named_flag_lists() -> None:
    assert parse_compare(["qwen0.5=--llm-model '/models/q 0.5.gguf' --no-drafts"]) == [
        ("qwen0.5", ["--llm-model", "/models/q 0.5.gguf", "--no-drafts"])]
    for bad in (["--llm-model x"], ["=--x"], ["default=--x"], ["a=--x", "a=--y"]):
        with pytest.raises(ValueError, match="--compare"):
            parse_compare(bad)


def test_the_report_splits_turns_by_who_answered(tmp_path: Path) -> None:
    summary = summarise(_result())
    skill, llm = summary["by_skill"], summary["by_llm"]
    assert skill["turns"] + llm["turns"] == summary["turns"]
    assert skill["turns"] == sum(t.skill is not None for t in _result().turns)


def test_a_turn_is_useful_only_when_right_and_heard_within_a_second() -> None:
    assert useful(_turn(True, ttfa=1000))
    assert not useful(_turn(True, ttfa=1001))
    assert not useful(_turn(False, ttfa=300))
    assert not useful(_turn(True, ttfa=None))
    assert not useful(_turn(None, ttfa=300))


def test_a_slow_turn_shows_where_its_time_went() -> None:
    slow = _turn(True, ttfa=1400)
    slow.timeline_ms = {"endpoint": 1000.0, "asr_final": 150.0, "first_clause": 800.0,
                        "ttfa_server": 1100.0}
    slow.speech_end_lag_ms = 80.0
    slow.done_logprob = -3.25
    lines = slow_turns(QualityResult("r", [], turns=[_turn(True, ttfa=900), slow]))
    assert lines == ["    1400 ms c#1 (llm, verdict -3.2): lag=80 endpoint=1000 asr_final=150 "
                     "first_clause=800 ttfa_server=1100"]


def test_blind_turns_are_counted_but_never_shown() -> None:
    """The blind split is read as figures only: its wrong and slow turns are not printed."""
    seen, blind = _turn(False, ttfa=1400), _turn(False, ttfa=1500)
    blind.blind = True
    result = QualityResult("r", [], turns=[seen, blind])
    for lines in (wrong_turns(result), slow_turns(result)):
        assert len(lines) == 2 and lines[-1] == "  … and 1 blind turns, not shown"
        assert "c#1" in lines[0]


def test_the_load_table_shows_pooled_ttfa_and_the_share_of_turns_degraded() -> None:
    """`--sessions`: per level, client TTFA p50/p95/max beside the degraded share (from
    the turns' tags, with the server's counters), useful % and right %."""
    turns = [_turn(True, ttfa=400), _turn(True, ttfa=900), _turn(False, ttfa=3000),
             _turn(True, ttfa=1500)]
    turns[2].degraded = ["no-speculation", "short"]
    turns[3].degraded = ["one-moment", "short"]
    loaded = QualityResult("3 at once", [], turns=turns,
                           stats={"degraded": {"short": 2, "no-speculation": 1}})
    s = summarise(loaded)["degraded"]
    assert s == {"turns": 2, "pct": 50.0,
                 "by_kind": {"no-speculation": 1, "short": 2, "one-moment": 1}}
    header, row = load_table([loaded])
    assert "degraded%" in header and "p50/p95/max" in header
    assert row.split()[:5] == ["3", "at", "once", "4", "1200/2775/3000"]
    assert row.split()[5:11] == ["50.0", "2", "1", "1", "50.0", "75.0"]
    assert row.endswith("no-speculation=1 short=2")
    quiet = load_table([QualityResult("1 at once", [], turns=[_turn(True)])])[1]
    assert quiet.split()[4:7] == ["600/600/600", "0.0", "0"] and quiet.endswith("-")
