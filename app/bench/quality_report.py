"""`apace bench --quality`'s results and report: what it said, beside how fast, per configuration.

One table row per configuration, from one run: useful % and right % (all turns with a rule,
the held-out conversations alone, and the blind ones — drawn from Home Assistant's
templates — alone), repeats, echoes, refusals where one was due, how long the
replies take to say, and the client-measured TTFA of the same turns (all of them, and the
right ones alone: DESIGN counts a fast wrong answer as a failure, not a fast turn). Written as
bench_quality.json (every turn, with its reasons) and bench_quality.png.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.quality import TurnScore

JSON_NAME, PNG_NAME = "bench_quality.json", "bench_quality.png"


@dataclass
class TurnOutcome:
    """One spoken turn of a scripted conversation: what was said, heard, replied, scored."""

    conversation: str
    turn: int
    """1-based, within its conversation."""
    say: str
    score: TurnScore
    held_out: bool = False
    """No one tunes on it (the held-out file or the blind one)."""
    blind: bool = False
    """From the blind file (drawn from Home Assistant's templates)."""
    voice: str = "piper x1"
    """Who spoke the question (app.bench.voices); a stand-in says whom it stood in for."""
    expect_refusal: bool | None = None
    transcript: str = ""
    """What the server heard (turns it split are joined with " / ")."""
    reply: str = ""
    skill: str | None = None
    """The skill that answered (None: the LLM, or no reply)."""
    interrupted: bool = False
    ttfa_client_ms: float | None = None
    ttfa_server_ms: float | None = None
    timeline_ms: dict[str, float] = field(default_factory=dict)
    """The server's stamps for the reply (ms from the server's own speech end)."""
    speech_end_lag_ms: float | None = None
    """How late the server's speech end came after the true end of the user's speech
    (the client's): a wait the server's own timeline cannot see."""
    done_logprob: float | None = None
    """The turn detector's verdict on the transcript (None: not asked)."""
    events: list[str] = field(default_factory=list)
    """Data-channel events seen during the turn besides "turn" (timers, timer_fired, barge_in, ...)."""
    degraded: list[str] = field(default_factory=list)
    """What the turn gave up under load (the turn event's tags: docs/scaling.md)."""
    first_heard: str | None = None
    """The first ear's words when the second ear heard the turn again (docs/quality.md)."""


@dataclass
class QualityResult:
    name: str
    flags: list[str]
    turns: list[TurnOutcome] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """Whole-run trouble: a server that died, a conversation that could not connect."""
    stats: dict[str, Any] = field(default_factory=dict)


USEFUL_MS = 1000.0
"""A reply is useful when it is right and its first audio is heard within this long of the
end of the user's speech, on the client's clock."""


def _pct(part: int, whole: int) -> float | None:
    return round(100 * part / whole, 1) if whole else None


def useful(turn: TurnOutcome) -> bool:
    """Right, and heard in time (DESIGN: a fast wrong answer is a failure, a slow right one
    is not useful)."""
    return bool(turn.score.right) and turn.ttfa_client_ms is not None \
        and turn.ttfa_client_ms <= USEFUL_MS


def _right(turns: list[TurnOutcome]) -> dict[str, Any]:
    scored = [t for t in turns if t.score.right is not None]
    right = sum(bool(t.score.right) for t in scored)
    ok = sum(useful(t) for t in scored)
    return {"scored": len(scored), "right": right, "right_pct": _pct(right, len(scored)),
            "useful": ok, "useful_pct": _pct(ok, len(scored))}


def _median(values: list[float]) -> float | None:
    return round(float(np.median(values)), 2) if values else None


def summarise(result: QualityResult) -> dict[str, Any]:
    """The numbers of one configuration's table row (and a few more for the JSON)."""
    turns = result.turns
    replied = [t for t in turns if t.reply.strip()]
    due = [t for t in turns if t.expect_refusal]
    out: dict[str, Any] = {
        "turns": len(turns), **_right(turns),
        "held_out": _right([t for t in turns if t.held_out and not t.blind]),
        "blind": _right([t for t in turns if t.blind]),
        "tuned": _right([t for t in turns if not t.held_out]),
        "voices": dict(Counter(t.voice for t in turns)),
        "repeats": sum(t.score.repeat for t in turns),
        "echoes": sum(t.score.echo for t in turns),
        "refusals_due": len(due),
        "refusals_ok": sum(t.score.refusal for t in due),
        "false_refusals": sum(t.score.refusal for t in turns if t.expect_refusal is False),
        "no_reply": sum(not t.reply.strip() for t in turns),
        "skill_turns": sum(t.skill is not None for t in turns),
        "spoken_s_p50": _median([t.score.spoken_s for t in replied]),
        "sentences_p50": _median([float(t.score.sentences) for t in replied]),
        "errors": len(result.errors),
        "degraded": _degraded(turns),
    }
    out.update(_latency(turns))
    # Who answered: a skill's turns (their own targets: right and fast) and the LLM's.
    for who, mine in (("by_skill", [t for t in turns if t.skill is not None]),
                      ("by_llm", [t for t in turns if t.skill is None])):
        out[who] = {"turns": len(mine), **_right(mine), **_latency(mine)}
    return out


def _degraded(turns: list[TurnOutcome]) -> dict[str, Any]:
    """How many turns gave something up under load, and how often each kind."""
    tagged = sum(bool(t.degraded) for t in turns)
    return {"turns": tagged, "pct": _pct(tagged, len(turns)),
            "by_kind": dict(Counter(kind for t in turns for kind in t.degraded))}


def load_table(results: list[QualityResult]) -> list[str]:
    """`--sessions`: per level, the pooled client TTFA (p50/p95/max), the share of turns
    degraded on purpose (their tags; the server's counters beside them), useful % and right %."""
    lines = [f"{'level':<16}{'turns':>6}{'TTFA client p50/p95/max':>25}{'degraded%':>10}"
             f"{'short':>6}{'no-spec':>8}{'moment':>7}{'useful%':>8}{'right%':>7}  server counts"]
    for result in results:
        s = summarise(result)
        values = [t.ttfa_client_ms for t in result.turns if t.ttfa_client_ms is not None]
        ttfa = "-" if not values else "/".join(
            f"{v:.0f}" for v in (*np.percentile(values, [50, 95]), max(values)))
        kinds = s["degraded"]["by_kind"]
        server = result.stats.get("degraded") or {}
        counts = " ".join(f"{k}={v}" for k, v in sorted(server.items())) or "-"
        lines.append(f"{result.name:<16}{s['turns']:>6}{ttfa:>25}"
                     f"{_cell(s['degraded']['pct'], 10)}{kinds.get('short', 0):>6}"
                     f"{kinds.get('no-speculation', 0):>8}{kinds.get('one-moment', 0):>7}"
                     f"{_cell(s['useful_pct'], 8)}{_cell(s['right_pct'], 7)}  {counts}")
    return lines


def _latency(turns: list[Any]) -> dict[str, Any]:
    # DESIGN counts TTFA only for a right reply: "ttfa_right" is that number.
    out: dict[str, Any] = {}
    for key, attr, only_right in (("ttfa_client", "ttfa_client_ms", False),
                                  ("ttfa_server", "ttfa_server_ms", False),
                                  ("ttfa_right", "ttfa_client_ms", True)):
        values = [v for t in turns
                  if (v := getattr(t, attr)) is not None and (t.score.right or not only_right)]
        if values:
            p50, p95 = np.percentile(values, [50, 95])
            out[key] = {"p50": round(float(p50), 1), "p95": round(float(p95), 1)}
    return out


def save(results: list[QualityResult], out: Path) -> dict[str, dict[str, Any]]:
    """Write bench_quality.json (summaries and every turn); a stopped run keeps what it had."""
    out.mkdir(parents=True, exist_ok=True)
    summaries = {r.name: summarise(r) for r in results}
    data = {"summaries": summaries, "configs": [asdict(r) for r in results]}
    (out / JSON_NAME).write_text(json.dumps(data, indent=1))
    return summaries


def _cell(value: float | None, width: int, digits: int = 1) -> str:
    return f"{value:>{width}.{digits}f}" if value is not None else f"{'-':>{width}}"


def table(summaries: dict[str, dict[str, Any]]) -> list[str]:
    """The report's table: one line per configuration."""
    lines = [f"{'config':<16}{'turns':>6}{'useful%':>8}{'held-out':>9}{'blind':>6}{'right%':>8}"
             f"{'held-out%':>10}{'blind%':>7}{'repeats':>8}"
             f"{'echoes':>7}{'refusals':>9}{'spoken s':>9}{'sentences':>10}"
             f"{'TTFA client p50/p95':>21}{'server p50':>11}{'right p50':>10}"]
    for name, s in summaries.items():
        client, server = s.get("ttfa_client", {}), s.get("ttfa_server", {})
        right = s.get("ttfa_right", {})
        ttfa = f"{client['p50']:.0f}/{client['p95']:.0f}" if client else "-"
        refusals = f"{s['refusals_ok']}/{s['refusals_due']}"
        lines.append(
            f"{name:<16}{s['turns']:>6}{_cell(s['useful_pct'], 8)}"
            f"{_cell(s['held_out']['useful_pct'], 9)}{_cell(s['blind']['useful_pct'], 6)}"
            f"{_cell(s['right_pct'], 8)}{_cell(s['held_out']['right_pct'], 10)}"
            f"{_cell(s['blind']['right_pct'], 7)}{s['repeats']:>8}{s['echoes']:>7}"
            f"{refusals:>9}{_cell(s['spoken_s_p50'], 9)}"
            f"{_cell(s['sentences_p50'], 10)}{ttfa:>21}{_cell(server.get('p50'), 11, 0)}"
            f"{_cell(right.get('p50'), 10, 0)}")
    lines.append("")
    lines.append(f"{'who answered':<24}{'turns':>6}{'useful%':>8}{'right%':>8}"
                 f"{'TTFA client p50/p95':>21}")
    for name, s in summaries.items():
        for who in ("by_skill", "by_llm"):
            part = s.get(who)
            if not part:
                continue
            client = part.get("ttfa_client", {})
            ttfa = f"{client['p50']:.0f}/{client['p95']:.0f}" if client else "-"
            label = f"{who.removeprefix('by_')}: {name}"
            lines.append(f"{label:<24}{part['turns']:>6}{_cell(part.get('useful_pct'), 8)}"
                         f"{_cell(part.get('right_pct'), 8)}{ttfa:>21}")
    return lines


def wrong_turns(result: QualityResult, width: int = 60) -> list[str]:
    """One line per turn that is wrong — or has no rule but is still a repeat, an echo or
    too long (a "note") — with what was asked, what came back, and why."""
    lines, withheld = [], 0
    for t in result.turns:
        if t.score.right is False or (t.score.right is None and t.score.reasons):
            if t.blind:
                withheld += 1
                continue
            reply = t.reply if len(t.reply) <= width else t.reply[: width - 1] + "…"
            kind = "wrong" if t.score.right is False else "note "
            lines.append(f"  {kind} {t.conversation}#{t.turn} {t.say!r} → {reply!r}: "
                         + "; ".join(t.score.reasons))
    return lines + _withheld(withheld)


def _withheld(count: int) -> list[str]:
    """The blind split is read as figures only: its turns are never printed (whoever reads
    them would tune on them; docs/bench-blind.md)."""
    return [f"  … and {count} blind turns, not shown"] if count else []


_STAGES = ("endpoint", "asr_final", "verdict", "llm_start", "ttft", "first_clause", "ttfa_server")


def slow_turns(result: QualityResult, limit_ms: float = USEFUL_MS) -> list[str]:
    """One line per reply heard later than `limit_ms`: where its time went. Stamps are ms
    from the server's speech end; `lag` is how late that came after the true end."""
    lines, withheld = [], 0
    for t in result.turns:
        if t.ttfa_client_ms is None or t.ttfa_client_ms <= limit_ms:
            continue
        if t.blind:
            withheld += 1
            continue
        stamps = " ".join(f"{name}={t.timeline_ms[name]:.0f}" for name in _STAGES
                          if t.timeline_ms.get(name) is not None)
        lag = f"{t.speech_end_lag_ms:.0f}" if t.speech_end_lag_ms is not None else "-"
        verdict = f"{t.done_logprob:.1f}" if t.done_logprob is not None else "-"
        who = t.skill or "llm"
        lines.append(f"  {t.ttfa_client_ms:>6.0f} ms {t.conversation}#{t.turn} ({who}, "
                     f"verdict {verdict}): lag={lag} {stamps}")
    return lines + _withheld(withheld)


def report(results: list[QualityResult], out: Path) -> dict[str, dict[str, Any]]:
    """Print the table (and each configuration's wrong turns); write the JSON and the PNG."""
    summaries = save(results, out)
    for result in results:
        wrong = wrong_turns(result)
        count = sum(t.score.right is False for t in result.turns)
        print(f"\n{result.name}: {count} of {len(result.turns)} turns wrong")
        if stand_ins := sum("instead of" in t.voice for t in result.turns):
            print(f"  note: {stand_ins} held-out turns were spoken by the Piper voice instead "
                  "of espeak-ng's (not installed): see each turn's `voice`")
        print("\n".join(wrong + [f"  error: {e}" for e in result.errors]))
        if slow := slow_turns(result):
            print(f"{result.name}: {len(slow)} replies heard after {USEFUL_MS:.0f} ms "
                  "(server stamps, ms from its speech end)")
            print("\n".join(slow))
    print()
    print("\n".join(table(summaries)))
    _chart(summaries, out / PNG_NAME)
    print(f"\nwrote {out / JSON_NAME} and {out / PNG_NAME}")
    return summaries


def _chart(summaries: dict[str, dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summaries)
    y = np.arange(len(names))
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 1.5 + 0.6 * len(names)))
    for offset, part, label in ((-0.27, None, "all"), (0.0, "held_out", "held-out"),
                                (0.27, "blind", "blind")):
        left.barh(y + offset, [(summaries[n][part] if part else summaries[n])["right_pct"] or 0
                               for n in names], 0.27, label=label)
    left.set_xlim(0, 100)
    left.set_xlabel("right (%)")
    left.set_title("What it says")
    left.legend()
    for offset, key, label in ((-0.2, "ttfa_client", "all replies"),
                               (0.2, "ttfa_right", "right replies")):
        right.barh(y + offset, [summaries[n].get(key, {}).get("p50", 0) for n in names], 0.4,
                   label=label)
    right.set_xlabel("TTFA p50, client-measured (ms)")
    right.set_title("How fast")
    right.legend()
    for axis in (left, right):
        axis.set_yticks(y, names)
        axis.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
