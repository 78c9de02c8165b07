"""`apace bench --room`'s report: the table per condition, each condition's TTFA paired
with the clean room's, and the server's counters (app/bench/room.py runs the conditions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from app.bench.room import ConditionResult
    from app.bench.room_score import Asked


def pair_with_clean(results: Sequence[ConditionResult]) -> None:
    """Each condition's TTFA against the clean room's, question by question (the median of
    the differences, and both p50s over the questions both answered): TTFA is bimodal
    (a skill ~0.6 s, the LLM ~1.5 s), so over 16 questions a p50 jumps between the modes
    when one or two answers move; paired differences do not."""
    clean = next((r for r in results if r.condition.name == "clean"), None)
    if clean is None:
        return
    base = _question_ttfa(clean.asked)
    for result in results:
        if result is clean:
            continue
        pairs = [(base[text], ttfa) for text, ttfa in _question_ttfa(result.asked).items()
                 if text in base]
        if pairs:
            ours, theirs = np.array(pairs).T
            result.summary["ttfa_vs_clean"] = {
                "n": len(pairs), "median_diff_ms": round(float(np.median(theirs - ours)), 1),
                "clean_p50_ms": round(float(np.median(ours)), 1),
                "p50_ms": round(float(np.median(theirs)), 1)}


def _question_ttfa(asked: Sequence[Asked]) -> dict[str, float]:
    return {a.text: a.ttfa_ms for a in asked
            if not a.talk_over and not a.lead_in and a.ttfa_ms is not None}


def report(results: Sequence[ConditionResult]) -> None:
    print(f"\n{'condition':<17}{'asked':>6}{'turns':>6}{'phantom':>8}{'lost':>5}{'WER':>7}"
          f"{'self-cut':>9}{'talk-over':>10}  {'stop ms':<18}{'TTFA p50/p95':>14}{'answered':>9}"
          f"{'skill TTFA p50 (n)':>20}{'endpoint p50':>13}")
    for r in results:
        s = r.summary
        ttfa = s.get("ttfa_client", {})
        stops = ",".join(f"{v:.0f}" if v is not None else "-" for v in s["stop_ms"]) or "-"
        cell = f"{ttfa['p50']:.0f}/{ttfa['p95']:.0f}" if ttfa else "-"
        print(f"{r.condition.name:<17}{s['questions']:>6}{s['turns']:>6}{s['phantom_turns']:>8}"
              f"{s['lost']:>5}{s['wer']:>7.3f}{s['self_interruptions']:>9}"
              f"{s['talk_overs_honoured']:>6}/{s['talk_overs']:<3}  {stops:<18}{cell:>14}"
              f"{s['talk_overs_answered']:>9}{_skill_cell(s):>20}"
              f"{s.get('endpoint_ms_p50', float('nan')):>13.0f}")
    for r in results:
        if lag := r.summary.get("speech_end_lag_ms"):
            print(f"{r.condition.name}: the server's speech end after the user's (the clean "
                  f"voice's end; TTFA counts from it): p50 {lag['p50']:+.0f} ms, "
                  f"p90 {lag['p90']:+.0f} ms")
        if paired := r.summary.get("ttfa_vs_clean"):
            print(f"{r.condition.name}: TTFA against the clean room, the same {paired['n']} "
                  f"questions: median difference {paired['median_diff_ms']:+.0f} ms "
                  f"(p50 {paired['clean_p50_ms']:.0f} → {paired['p50_ms']:.0f})")
        if said := r.summary.get("backchannels"):
            print(f"{r.condition.name}: backchannels over a reply {said}: cut it"
                  f" {r.summary['backchannels_cut']}, answered as a turn"
                  f" {r.summary['backchannels_answered']}")
        if late := r.summary.get("talk_overs_after_reply"):
            print(f"{r.condition.name}: {late} talk-over(s) began after the reply had ended "
                  "(not counted)")
        if spec := r.summary.get("speculation"):
            print(f"{r.condition.name}: speculation {spec.get('started', 0):.0f} started, "
                  f"{spec.get('cancelled', 0):.0f} cancelled; heard again after late voice "
                  f"{spec.get('reheard', 0):.0f} ({spec.get('kept', 0):.0f} the same words); "
                  f"replies the noisy-room ear heard {spec.get('noisy_ear_replies', 0):.0f}; "
                  f"replies held {spec.get('holds', 0):.0f} (went on: "
                  f"{spec.get('holds_released', 0):.0f})")


def _skill_cell(summary: dict[str, Any]) -> str:
    skill = summary.get("ttfa_client_skill")
    return f"{skill['p50']:.0f} ({skill['n']})" if skill else "-"
