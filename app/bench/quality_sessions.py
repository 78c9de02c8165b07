"""`apace bench --quality --sessions 1,2,3`: the quality conversations, N at a time.

What a household or an office gets from one box: N clients talk to one `apace serve` at
once, each speaking its share of the scripted conversations (app.bench.conversations)
one after another, client k starting k x `STAGGER_S` after the first. Every turn is
scored by its rules as in `--quality`, and timed on the client's clock, so each level's
row holds what was said and how fast, from the same run; a last table shows, per level,
the pooled client TTFA (p50/p95/max) beside the share of turns degraded on purpose
(pipeline.compute.degrade; `--compare "off=--no-degrade"` is the A/B). Conversations
that restart the server are left out (a restart would end everyone's session); the shopping-list ones
all go to one client, in order, since the list is one per household.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from app.bench.conversations import ConversationSpec, conversation_set
from app.bench.latency import Utterance
from app.bench.quality import ManagedServer, RunOptions, parse_compare, run_conversation
from app.bench.quality_report import QualityResult, load_table, report, save
from app.bench.voices import make_utterances

STAGGER_S = 2.0
"""Client k starts this many seconds after client k - 1: their questions overlap."""
SHARED_STATE = "shopping-list"
"""Conversations whose names start so share the household's list: one client, in order."""


def client_shares(conversations: Sequence[ConversationSpec], n: int
                  ) -> list[list[ConversationSpec]]:
    """The conversations each of `n` clients speaks: the list ones to client 0, the rest
    longest first to whichever client has the fewest turns so far."""
    usable = [c for c in conversations if not c.restart_before]
    shares: list[list[ConversationSpec]] = [[] for _ in range(n)]
    shares[0] += [c for c in usable if c.name.startswith(SHARED_STATE)]
    rest = sorted((c for c in usable if not c.name.startswith(SHARED_STATE)),
                  key=lambda c: -len(c.turns))
    for conversation in rest:
        min(shares, key=lambda share: sum(len(c.turns) for c in share)).append(conversation)
    return shares


async def run_level(url: str, shares: Sequence[Sequence[ConversationSpec]],
                    utterances: Mapping[str, Utterance], options: RunOptions,
                    name: str) -> QualityResult:
    """Every client's share at once; one result with all their turns."""
    result = QualityResult(name, [])

    async def client(k: int, share: Sequence[ConversationSpec]) -> None:
        await asyncio.sleep(k * STAGGER_S)
        for conversation in share:
            outcomes, problem = await run_conversation(url, conversation, utterances, options)
            result.turns += outcomes
            if problem:
                result.errors.append(f"client {k}, {conversation.name!r}: {problem}")

    await asyncio.gather(*(client(k, share) for k, share in enumerate(shares)))
    return result


def bench_quality_sessions(*, counts: Sequence[int], out: Path,
                           server_args: Sequence[str] = (), compare: Sequence[str] = (),
                           only: Sequence[str] = (),
                           options: RunOptions | None = None) -> list[QualityResult]:
    """One fresh server per level and configuration (admission off: the bench measures
    what N sessions get, not whether the server would let them in). With `compare`, each
    level runs every configuration before the next level: paired A/B rows."""
    from app.serve import use_loopback_candidates

    use_loopback_candidates()
    options = options or RunOptions()
    conversations = conversation_set(only)
    utterances = make_utterances(conversations)
    configs = [("default", []), *parse_compare(compare)]
    results: list[QualityResult] = []
    for n, (config, flags) in ((n, c) for n in counts for c in configs):
        name = f"{n} at once" if len(configs) == 1 else f"{config} {n}x"
        print(f"bench --quality --sessions: {name} {' '.join(flags)}", flush=True)
        with tempfile.TemporaryDirectory(prefix="apace-quality-") as data:
            server = ManagedServer(["--max-sessions", str(n + 1), "--no-admission",
                                    *server_args, *flags], Path(data))
            try:
                result = asyncio.run(run_level(server.url, client_shares(conversations, n),
                                               utterances, options, name))
                if server.alive():
                    stats = server.process.get("/api/stats")
                    result.stats = {**stats.get("engine", {}),
                                    "memory": stats.get("memory", {})}
            finally:
                server.stop()
        results.append(result)
        save(results, out)  # a stopped run keeps the levels it finished
    summaries = report(results, out)
    for result in results:
        values = [t.ttfa_client_ms for t in result.turns if t.ttfa_client_ms is not None]
        p99 = float(np.percentile(values, 99)) if values else None
        summaries[result.name]["ttfa_client_p99"] = p99
        print(f"{result.name}: TTFA client p99 {p99 or 0:.0f} ms over {len(values)} turns")
    print("\nunder load (what was given up on purpose: docs/scaling.md)")
    print("\n".join(load_table(results)))
    return results
