"""`apace bench --sessions N`: many conversations at once on one `apace serve`.

N real WebRTC clients (app.transports.webrtc.client) connect, all before anyone speaks, then talk at once:
client k starts k x `stagger_s` after the first, asks its own order of the questions
(the shipped set plus the held-out lines of app.bench.latency), waits for each reply to
play out and then a short seeded random gap, and asks the next, as people would. TTFA is
timed on the client's clock as in the single-client bench: end of speech sent → first
audible reply audio received. A turn with no reply within `LOST_S` is lost.

The orders differ between clients, and between the levels of N run on one server: the
reply cache is keyed on the conversation so far, so two sessions can share a cached reply
only on their first question, and only once the run has more sessions than questions.

The server's RSS (GET /healthz) is sampled before the clients connect, with all of them
connected and idle, after they talked and after they left: (idle - before) / N is what
an idle session costs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

from app.bench.latency import HELD_OUT, Utterance
from app.process import ServerProcess
from app.transports.webrtc.client import Client
from pipeline.timeline import now

MAX_SESSIONS = 16
STAGGER_S = 1.3
"""Client k first speaks k x this after client 0: the questions overlap, not coincide."""
GAP_S = (0.5, 1.5)
"""A client's pause, drawn uniformly, between its reply going quiet and its next question."""
QUIET_S = 0.7
"""A reply has finished playing after this long without audible audio."""
LOST_S = 15.0
SLO_MS = 1000.0
IDLE_S = 1.0
"""Connected sessions settle this long before the idle RSS is read."""
MIB = 1 << 20


def parse_sessions(spec: str) -> list[int]:
    """`--sessions`: "3" or "1,2,3,4" → the session counts to run, sorted, each once."""
    counts = set()
    for part in spec.split(","):
        part = part.strip()
        if not (part.isascii() and part.isdigit() and 1 <= int(part) <= MAX_SESSIONS):
            raise ValueError(f"--sessions {spec!r}: give session counts from 1 to {MAX_SESSIONS},"
                             " comma-separated, e.g. 3 or 1,2,3,4")
        counts.add(int(part))
    return sorted(counts)


@dataclass(frozen=True)
class ClientPlan:
    """What one client says and when: its first question `start_s` after the level
    starts, then each of `texts` in turn, pausing `gaps_s[i]` after reply i played out."""

    start_s: float
    texts: tuple[str, ...]
    gaps_s: tuple[float, ...]


def plan_sessions(n: int, questions: Sequence[str], *, rounds: int, stagger_s: float = STAGGER_S,
                  seed: int = 0, first_session: int = 0) -> list[ClientPlan]:
    """The plans of `n` clients talking at once. Client k is session `first_session` + k
    of the run (see `rotation`); it asks its order `rounds` times."""
    if not questions or rounds < 1:
        raise ValueError("sessions need at least one question and one round")
    rng = random.Random(seed)
    plans = []
    for k in range(n):
        texts = tuple(questions[i] for i in rotation(len(questions), first_session + k)) * rounds
        gaps = tuple(round(rng.uniform(*GAP_S), 3) for _ in texts)
        plans.append(ClientPlan(round(k * stagger_s, 3), texts, gaps))
    return plans


def rotation(size: int, session: int) -> list[int]:
    """Session g's question order: every question once, from question g mod `size`, in
    steps of the (g // `size`)-th step coprime with `size`. The first `size` sessions
    start on different questions; two orders with the same start differ from the second."""
    steps = [s for s in range(1, size) if math.gcd(s, size) == 1] or [1]
    step = steps[(session // size) % len(steps)]
    return [(session + i * step) % size for i in range(size)]


@dataclass
class Turn:
    client: int
    text: str
    sent_s: float
    """The end of its speech left the client, seconds after the level started."""
    ttfa_ms: float | None
    """None: lost (no audible reply within LOST_S)."""


@dataclass
class Level:
    n: int
    turns: list[Turn] = field(default_factory=list)
    rss_bytes: dict[str, int | None] = field(default_factory=dict)
    """The server's RSS by moment: before, idle, talked, left."""

    def ttfa(self) -> list[list[float | None]]:
        return [[t.ttfa_ms for t in self.turns if t.client == k] for k in range(self.n)]


async def run_level(url: str, plans: Sequence[ClientPlan], speech: Mapping[str, Utterance]) -> Level:
    """Connect every client, read the idle server, then let them all talk."""
    level = Level(len(plans))
    before = await _health(url)
    level.rss_bytes["before"] = before.get("rss_bytes")
    async with contextlib.AsyncExitStack() as stack:
        clients = [await _connect(url, stack, k, len(plans)) for k in range(len(plans))]
        await asyncio.sleep(IDLE_S)
        level.rss_bytes["idle"] = (await _health(url)).get("rss_bytes")
        start = now()
        talks = await asyncio.gather(*(_converse(client, k, plan, speech, start) for k, (client, plan)
                                       in enumerate(zip(clients, plans, strict=True))))
        level.turns = [turn for turns in talks for turn in turns]
        level.rss_bytes["talked"] = (await _health(url)).get("rss_bytes")
    deadline = now() + 10.0  # the server forgets a closed session a moment later
    while (after := await _health(url))["sessions"] > before["sessions"] and now() < deadline:
        await asyncio.sleep(0.2)
    level.rss_bytes["left"] = after.get("rss_bytes")
    return level


async def _connect(url: str, stack: contextlib.AsyncExitStack, index: int, n: int) -> Client:
    client = Client(url)
    try:
        await client.connect()
    except (OSError, TimeoutError, aiohttp.ClientError) as error:
        await client.close()
        raise RuntimeError(f"session {index + 1} of {n} did not connect ({error}); a server "
                           f"started by hand needs --max-sessions {n} or more") from error
    stack.push_async_callback(client.close)
    return client


async def _converse(client: Client, index: int, plan: ClientPlan, speech: Mapping[str, Utterance],
                    start: float) -> list[Turn]:
    """One client's side: from its start, each question, its reply played out, a gap."""
    await asyncio.sleep(max(0.0, start + plan.start_s - now()))
    turns = []
    for text, gap in zip(plan.texts, plan.gaps_s, strict=True):
        utterance = speech[text]
        end = await client.say(utterance.pcm, utterance.speech_end)
        heard = await _first_heard(client, end, LOST_S)
        ttfa = round((heard - end) * 1000, 1) if heard is not None else None
        turns.append(Turn(index, text, round(end - start, 3), ttfa))
        await _quiet(client, QUIET_S, 30.0)
        await asyncio.sleep(gap)
    return turns


async def _first_heard(client: Client, after: float, timeout: float) -> float | None:
    deadline = now() + timeout
    while (heard := client.received.first_audible_after(after)) is None and now() < deadline:
        await asyncio.sleep(0.02)
    return heard


async def _quiet(client: Client, quiet_s: float, timeout: float) -> None:
    deadline = now() + timeout
    while (last := client.received.last_audible()) is not None and now() - last < quiet_s:
        if now() >= deadline:
            return
        await asyncio.sleep(0.05)


async def _health(url: str) -> dict[str, Any]:
    """The server's /healthz: live `sessions` and `rss_bytes` (absent off Linux). The
    plain form carries both; `?detail` adds task names and needs the credential."""

    def get() -> dict[str, Any]:
        with urllib.request.urlopen(f"{url.rstrip('/')}/healthz", timeout=10) as response:
            return dict(json.loads(response.read()))

    return await asyncio.to_thread(get)


def summarize(ttfa: Mapping[int, Sequence[Sequence[float | None]]],
              rss: Mapping[int, Mapping[str, int | None]], slo_ms: float = SLO_MS) -> dict[str, Any]:
    """Per session count N: `ttfa[N][k]` is client k's TTFA per turn (ms; None: lost),
    `rss[N]` the server's RSS in bytes by moment. A level keeps the SLO when its pooled
    p95, lost turns counted as LOST_S late, is at most `slo_ms`: a lost reply is worse
    than a slow one. `largest_n_within_slo` is the largest N that kept it with every
    smaller N measured: one lucky level past a failed one is not capacity."""
    levels = {str(n): _level(n, ttfa[n], rss.get(n, {}), slo_ms) for n in sorted(ttfa)}
    largest = None
    for n in sorted(ttfa):
        if not levels[str(n)]["within_slo"]:
            break
        largest = n
    return {"slo_ms": slo_ms, "lost_after_s": LOST_S, "largest_n_within_slo": largest,
            "levels": levels}


def _level(n: int, per_client: Sequence[Sequence[float | None]], rss: Mapping[str, int | None],
           slo_ms: float) -> dict[str, Any]:
    pooled = [t for client in per_client for t in client]
    heard = [t for t in pooled if t is not None]
    with_lost = _percentiles([LOST_S * 1000 if t is None else t for t in pooled])
    p95 = with_lost["p95"] if with_lost else None
    before, idle = rss.get("before"), rss.get("idle")
    return {
        "clients": n, "turns": len(pooled), "lost": len(pooled) - len(heard),
        "ttfa_ms": _percentiles(heard), "p95_with_lost_ms": p95,
        "within_slo": p95 is not None and p95 <= slo_ms,
        "per_client": [{"turns": len(c), "lost": sum(t is None for t in c),
                        "ttfa_ms": _percentiles([t for t in c if t is not None])} for c in per_client],
        "rss_mib": {k: round(v / MIB, 1) for k, v in rss.items() if v is not None},
        "rss_per_idle_session_mib": (round((idle - before) / n / MIB, 2)
                                     if idle is not None and before is not None else None),
    }


def _percentiles(values: Sequence[float]) -> dict[str, float] | None:
    if not values:
        return None
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return {"p50": round(float(p50), 1), "p95": round(float(p95), 1), "p99": round(float(p99), 1)}


def session_questions() -> list[str]:
    """The shipped question set, then the held-out questions (spoken without pauses)."""
    from app.bench.utterances import questions

    return [*questions(), *(text for text, _ in HELD_OUT)]


def _speak(texts: Sequence[str]) -> dict[str, Utterance]:
    from app.bench.utterances import speak
    from models.load import load_synthesizer
    from models.locate import locate
    from pipeline.answer.tts import TtsOptions

    voice = load_synthesizer(locate("tts").path, TtsOptions())
    return {text: Utterance(text, speak(voice, text, lead_s=0.3, trail_s=0.5)) for text in texts}


def bench_sessions(*, url: str | None, counts: Sequence[int], out: Path, rounds: int,
                   server_args: Sequence[str] = (), stagger_s: float = STAGGER_S,
                   slo_ms: float = SLO_MS, seed: int = 0) -> dict[str, Any]:
    """Each count of sessions in turn, on one server (started here with room for the
    largest count, unless `url` names one). Writes bench_sessions.json and .png."""
    from app.serve import use_loopback_candidates

    if rounds < 1:
        raise ValueError("--rounds must be at least 1")
    use_loopback_candidates()
    texts = session_questions()
    speech = _speak(texts)
    server = (ServerProcess("--max-sessions", str(max(counts)), *server_args)
              if url is None else None)
    levels: list[Level] = []
    try:
        target = server.url if server is not None else str(url)
        for n in counts:
            print(f"bench --sessions: {n} at once", flush=True)
            plans = plan_sessions(n, texts, rounds=rounds, stagger_s=stagger_s, seed=seed + n,
                                  first_session=sum(level.n for level in levels))
            levels.append(asyncio.run(run_level(target, plans, speech)))
            _save(levels, slo_ms, out)  # a long run keeps what it measured if stopped
    finally:
        if server is not None:
            server.stop()
    summary = _save(levels, slo_ms, out)
    report(summary)
    _chart(summary, out / "bench_sessions.png")
    print(f"\nwrote {out / 'bench_sessions.json'} and {out / 'bench_sessions.png'}")
    return summary


def _save(levels: Sequence[Level], slo_ms: float, out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize({lv.n: lv.ttfa() for lv in levels}, {lv.n: lv.rss_bytes for lv in levels},
                        slo_ms)
    data = {"summary": summary, "levels": [asdict(lv) for lv in levels]}
    (out / "bench_sessions.json").write_text(json.dumps(data, indent=1))
    return summary


def report(summary: Mapping[str, Any]) -> None:
    print(f"\n{'N':>3}{'turns':>7}{'lost':>6}{'TTFA p50/p95/p99 ms':>22}{'p95+lost':>10}"
          f"{'worst client p95':>18}{'MiB/idle session':>18}")
    for n, s in summary["levels"].items():
        t = s["ttfa_ms"]
        cell = f"{t['p50']:.0f}/{t['p95']:.0f}/{t['p99']:.0f}" if t else "-"
        worst = max((c["ttfa_ms"]["p95"] for c in s["per_client"] if c["ttfa_ms"]), default=None)
        print(f"{n:>3}{s['turns']:>7}{s['lost']:>6}{cell:>22}{_cell(s['p95_with_lost_ms']):>10}"
              f"{_cell(worst):>18}{_cell(s['rss_per_idle_session_mib'], '.2f'):>18}")
    print(f"\nlargest N within p95 ≤ {summary['slo_ms']:.0f} ms: "
          f"{summary['largest_n_within_slo'] or 'none'}")


def _cell(value: float | None, spec: str = ".0f") -> str:
    return "-" if value is None else format(value, spec)


def _chart(summary: Mapping[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = [(int(n), s["ttfa_ms"]) for n, s in summary["levels"].items() if s["ttfa_ms"]]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key in ("p50", "p95"):
        ax.plot([n for n, _ in levels], [t[key] for _, t in levels], marker="o", label=key)
    ax.axhline(summary["slo_ms"], color="grey", linestyle="--", label=f"SLO {summary['slo_ms']:.0f} ms")
    ax.set_xticks([n for n, _ in levels])
    ax.set_xlabel("sessions talking at once")
    ax.set_ylabel("TTFA, client-measured (ms)")
    ax.set_title("TTFA by number of concurrent sessions")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
