"""`apace bench --sessions`: which counts run, who says what when, and how turns are scored."""

from __future__ import annotations

import argparse
import asyncio

import numpy as np
import pytest

from app.bench import sessions
from app.bench.latency import Utterance
from app.bench.sessions import (
    GAP_S,
    LOST_S,
    MIB,
    ClientPlan,
    parse_sessions,
    plan_sessions,
    rotation,
    summarize,
)
from app.cli.bench import bench_flags, command
from app.cli.errors import UsageError

QUESTIONS = [f"question {i}" for i in range(16)]


def test_session_counts_are_sorted_and_each_run_once() -> None:
    assert parse_sessions("3") == [3]
    assert parse_sessions("4, 1,2,2,16") == [1, 2, 4, 16]


@pytest.mark.parametrize("spec", ["", "0", "17", "1,,2", "two", "-1", "1.5", "3,x"])
def test_a_bad_session_count_is_refused_with_the_expected_form(spec: str) -> None:
    with pytest.raises(ValueError, match=r"1 to 16.*e\.g\. 3 or 1,2,3,4"):
        parse_sessions(spec)


def test_the_cli_turns_a_bad_spec_into_a_usage_error_before_anything_runs() -> None:
    parser = argparse.ArgumentParser()
    bench_flags(parser)
    with pytest.raises(UsageError, match="--sessions '0'"):
        command(parser.parse_args(["--sessions", "0"]))


def test_clients_start_staggered_each_on_a_different_question() -> None:
    plans = plan_sessions(4, QUESTIONS, rounds=2, stagger_s=1.3, seed=1)
    assert [p.start_s for p in plans] == [0.0, 1.3, 2.6, 3.9]
    assert len({p.texts[0] for p in plans}) == 4
    for plan in plans:  # every question, `rounds` times, in the same order each round
        assert len(plan.texts) == 32 and sorted(plan.texts[:16]) == sorted(QUESTIONS)
        assert plan.texts[:16] == plan.texts[16:]
        assert len(plan.gaps_s) == 32 and all(GAP_S[0] <= g <= GAP_S[1] for g in plan.gaps_s)


def test_gaps_are_random_but_the_same_for_the_same_seed() -> None:
    first = plan_sessions(3, QUESTIONS, rounds=1, seed=5)
    assert first == plan_sessions(3, QUESTIONS, rounds=1, seed=5)
    assert first != plan_sessions(3, QUESTIONS, rounds=1, seed=6)
    assert len({g for p in first for g in p.gaps_s}) > 10


def test_no_two_sessions_of_a_run_share_a_history_past_the_first_question() -> None:
    # Levels 1..16 on one server: 136 sessions. The reply cache keys on the conversation
    # so far, so a shared first *two* questions would let one session ride another's cache.
    orders = [tuple(rotation(16, g)) for g in range(136)]
    assert all(sorted(order) == list(range(16)) for order in orders)
    assert len({order[:2] for order in orders}) == 128  # 16 starts x 8 steps coprime to 16
    assert len({order[0] for order in orders[:16]}) == 16
    later = plan_sessions(2, QUESTIONS, rounds=1, first_session=3)
    assert [p.texts[0] for p in later] == ["question 3", "question 4"]


def test_percentiles_are_pooled_and_per_client_and_lost_turns_counted() -> None:
    ttfa = {2: [[100.0, 200.0, 300.0, None], [400.0, 500.0]]}
    level = summarize(ttfa, {}, slo_ms=1000)["levels"]["2"]
    assert level["turns"] == 6 and level["lost"] == 1
    assert level["ttfa_ms"]["p50"] == 300.0  # over the five heard turns
    assert level["ttfa_ms"]["p95"] == pytest.approx(480.0)
    assert level["per_client"][0] == {"turns": 4, "lost": 1,
                                      "ttfa_ms": {"p50": 200.0, "p95": 290.0, "p99": 298.0}}
    assert level["per_client"][1]["ttfa_ms"]["p50"] == 450.0
    # The lost turn counts as LOST_S late in the p95 the SLO is judged on.
    assert level["p95_with_lost_ms"] > 500.0 and not level["within_slo"]
    assert level["p95_with_lost_ms"] == pytest.approx(500 + 0.75 * (LOST_S * 1000 - 500))


def test_the_largest_n_within_slo_is_the_last_before_the_first_failure() -> None:
    fast, slow = [[500.0] * 20], [[1500.0] * 20]
    ttfa = {1: fast, 2: fast, 3: slow, 4: fast}
    summary = summarize(ttfa, {}, slo_ms=1000)
    assert [s["within_slo"] for s in summary["levels"].values()] == [True, True, False, True]
    assert summary["largest_n_within_slo"] == 2
    assert summarize({1: slow}, {}, slo_ms=1000)["largest_n_within_slo"] is None
    assert summarize({1: slow}, {}, slo_ms=2000)["largest_n_within_slo"] == 1


def test_a_few_lost_turns_in_many_keep_the_slo_but_more_than_five_percent_do_not() -> None:
    one = summarize({1: [[500.0] * 39 + [None]]}, {}, slo_ms=1000)["levels"]["1"]
    three = summarize({1: [[500.0] * 37 + [None] * 3]}, {}, slo_ms=1000)["levels"]["1"]
    assert one["lost"] == 1 and one["p95_with_lost_ms"] == 500.0 and one["within_slo"]
    assert three["lost"] == 3 and three["p95_with_lost_ms"] == LOST_S * 1000
    assert not three["within_slo"]
    assert three["ttfa_ms"]["p95"] == 500.0  # the heard turns alone look fine


def test_rss_per_idle_session_is_the_idle_growth_over_n() -> None:
    rss = {4: {"before": 800 * MIB, "idle": 812 * MIB, "talked": 900 * MIB, "left": None}}
    level = summarize({4: [[500.0]] * 4}, rss)["levels"]["4"]
    assert level["rss_per_idle_session_mib"] == 3.0
    assert level["rss_mib"] == {"before": 800.0, "idle": 812.0, "talked": 900.0}
    unknown = summarize({4: [[500.0]] * 4}, {4: {"before": None, "idle": 812 * MIB}})
    assert unknown["levels"]["4"]["rss_per_idle_session_mib"] is None


class FakeClient:
    """Replies after the next of `delays` (None: never), heard once that time has come."""

    def __init__(self, delays: list[float | None]) -> None:
        self.delays = delays
        self.replies: list[float] = []
        self.received = self

    async def say(self, pcm: object, speech_end: int) -> float:
        end = sessions.now()
        if (delay := self.delays.pop(0)) is not None:
            self.replies.append(end + delay)
        return end

    def first_audible_after(self, t: float) -> float | None:
        return next((at for at in self.replies if t <= at <= sessions.now()), None)

    def last_audible(self) -> float | None:
        heard = [at for at in self.replies if at <= sessions.now()]
        return heard[-1] if heard else None


def test_a_client_times_each_reply_from_its_speech_end_and_a_missing_one_is_lost(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sessions, "LOST_S", 0.5)
    monkeypatch.setattr(sessions, "QUIET_S", 0.05)
    pcm = np.ones(1600, np.int16)
    speech = {q: Utterance(q, pcm) for q in ("a", "b", "c")}
    plan = ClientPlan(start_s=0.2, texts=("a", "b", "c"), gaps_s=(0.0, 0.0, 0.0))
    client = FakeClient([0.3, None, 0.1])

    async def talk() -> list[sessions.Turn]:
        return await sessions._converse(client, 2, plan, speech, sessions.now())  # type: ignore[arg-type]

    turns = asyncio.run(talk())
    assert [(t.client, t.text) for t in turns] == [(2, "a"), (2, "b"), (2, "c")]
    assert turns[0].sent_s >= 0.2  # it waited for its start
    assert turns[0].ttfa_ms is not None and 300 <= turns[0].ttfa_ms < 1000
    assert turns[1].ttfa_ms is None  # nothing within LOST_S
    assert turns[2].ttfa_ms is not None and 100 <= turns[2].ttfa_ms < 800
    assert turns[1].sent_s - turns[0].sent_s >= 0.3 + 0.05  # waited for the reply to play out


def test_quality_sessions_split_the_conversations_and_keep_the_list_on_one_client() -> None:
    from app.bench.conversations import conversation_set
    from app.bench.quality_sessions import SHARED_STATE, client_shares

    conversations = conversation_set()
    shares = client_shares(conversations, 3)
    names = [c.name for share in shares for c in share]
    assert sorted(names) == sorted(c.name for c in conversations if not c.restart_before)
    assert all(c.name in [x.name for x in shares[0]]
               for c in conversations if c.name.startswith(SHARED_STATE) and not c.restart_before)
    turns = [sum(len(c.turns) for c in share) for share in shares]
    assert max(turns) - min(turns) <= max(len(c.turns) for c in conversations)
    assert client_shares(conversations, 1)[0]  # one client speaks them all
