"""Dashboard arithmetic: percentiles, SLO attainment, waterfalls, loop lag, /metrics text."""

from __future__ import annotations

import asyncio
import itertools
import math
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.observe.metrics import (
    LoopLag,
    latency_summary,
    percentile,
    slo_attainment,
    summarize,
    ttfa_ms,
    waterfall,
)
from app.observe.prometheus import Metrics
from pipeline.compute.stats import EngineStats


def test_percentile_interpolates_between_order_statistics_like_numpy() -> None:
    values = [400.0, 100.0, 300.0, 200.0]
    assert percentile(values, 0.0) == 100.0
    assert percentile(values, 1.0) == 400.0
    assert percentile(values, 0.5) == 250.0
    assert percentile(values, 0.95) == pytest.approx(385.0)


def test_percentile_of_one_value_is_that_value_and_of_none_is_none() -> None:
    assert percentile([123.4], 0.99) == 123.4
    assert percentile([], 0.5) is None


def test_percentile_refuses_a_quantile_outside_zero_to_one() -> None:
    with pytest.raises(ValueError, match=r"0\.\.1"):
        percentile([1.0], 95)


def test_summary_has_count_and_p50_p95_p99_rounded_to_a_tenth() -> None:
    summary = summarize([float(v) for v in range(1, 101)])
    assert summary == {"count": 100, "p50": 50.5, "p95": 95.0, "p99": 99.0}
    assert summarize([]) == {"count": 0, "p50": None, "p95": None, "p99": None}


def test_slo_attainment_counts_turns_at_or_under_the_objective() -> None:
    assert slo_attainment([500, 800, 801, 1200], 800) == {
        "objective_ms": 800, "met": 2, "count": 4, "attainment": 0.5}
    assert slo_attainment([], 800)["attainment"] is None


def test_ttfa_is_the_browsers_where_measured_else_the_servers() -> None:
    assert ttfa_ms({"ttfa_server": 600.0, "ttfa_browser": 690.0}) == 690.0
    assert ttfa_ms({"ttfa_server": 600.0}) == 600.0
    assert ttfa_ms({"ttft": 100.0}) is None


def test_latency_summary_covers_each_metric_and_judges_the_slo_on_ttfa() -> None:
    turns = [
        {"timeline_ms": {"ttft": 200.0, "ttfa_server": 700.0, "ttfa_browser": 780.0,
                         "ttua": 900.0}},
        {"timeline_ms": {"ttft": 300.0, "ttfa_server": 790.0, "ttua": 950.0}},
        {"timeline_ms": {"ttft": 400.0, "ttfa_server": 750.0, "ttfa_browser": 850.0}},
    ]
    summary = latency_summary(turns, 800.0)
    assert summary["latency"]["ttfa_browser"]["count"] == 2
    assert summary["latency"]["ttfa_server"]["p50"] == 750.0
    assert summary["latency"]["ttft"]["p99"] == pytest.approx(398.0)
    assert summary["latency"]["ttua"]["count"] == 2
    # 780 (browser) and 790 (server: no browser report) meet 800; 850 (browser) does not.
    assert summary["slo"]["met"] == 2 and summary["slo"]["count"] == 3


def test_waterfall_bars_follow_time_order_and_tile_the_axis_to_the_latest_stamp() -> None:
    # Speculation: the transcript was ready before the endpoint decision.
    timeline = {"endpoint": 263.6, "asr_final": 245.0, "ttft": 1559.1, "first_clause": 2074.2,
                "ttfa_server": 2533.8, "ttfa_browser": 2600.0, "ttua": 2533.8}
    bars = waterfall(timeline)
    assert [bar["name"] for bar in bars] == [
        "asr_final", "endpoint", "ttft", "first_clause", "ttfa_server", "ttua", "ttfa_browser"]
    assert bars[0]["start_ms"] == 0.0
    for before, after in itertools.pairwise(bars):
        assert after["start_ms"] == before["end_ms"]
    assert bars[-1]["end_ms"] == 2600.0
    assert math.isclose(sum(b["end_ms"] - b["start_ms"] for b in bars), 2600.0)
    for bar in bars:
        assert bar["end_ms"] == timeline[bar["name"]]


def test_waterfall_of_a_turn_without_stamps_is_empty() -> None:
    assert waterfall({}) == []


def test_loop_lag_keeps_the_latest_and_worst_of_a_bounded_window() -> None:
    lag = LoopLag(window=3)
    assert lag.summary() == {"last": None, "max": None}
    for seconds in (0.050, 0.002, 0.001, 0.003):
        lag.record(seconds)
    assert lag.summary() == {"last": 3.0, "max": 3.0}  # 50 ms fell out of the window
    lag.record(-0.001)  # a timer firing early is no lag
    assert lag.summary()["last"] == 0.0


async def test_loop_lag_sees_a_blocked_event_loop() -> None:
    lag = LoopLag(interval_s=0.01)
    task = asyncio.create_task(lag.run())
    try:
        await asyncio.sleep(0.03)
        time.sleep(0.1)  # noqa: ASYNC251 (block the loop, as a model call on it would)
        await asyncio.sleep(0.03)
    finally:
        task.cancel()
        await asyncio.wait([task])
    worst = lag.summary()["max"]
    assert worst is not None and worst >= 80


def _families(metrics: Metrics) -> dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    """name → {(sample name, labels): value}."""
    out: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        out[family.name] = {(s.name, tuple(sorted(s.labels.items()))): s.value
                            for s in family.samples}
    return out


def test_metrics_histograms_count_recorded_turns_and_counters_read_engine_stats() -> None:
    stats = EngineStats(turns=2, barge_ins=1, asr_batches=3, asr_batched_jobs=7)
    stats.speculation.committed, stats.speculation.cancelled = 3, 1
    stats.tts_cache.hits, stats.tts_cache.misses = 5, 2
    metrics = Metrics(stats.snapshot, lambda: 1, lambda: 4.0)
    metrics.observe_turn({"endpoint": 300.0, "asr_final": 250.0, "ttft": 400.0,
                          "ttfa_server": 600.0, "ttua": 900.0})
    metrics.observe_turn({"endpoint": 310.0, "ttfa_server": 650.0, "ttfa_browser": 720.0})
    found = _families(metrics)
    assert found["apace_ttfa_seconds"][("apace_ttfa_seconds_count", (("where", "server"),))] == 2
    assert found["apace_ttfa_seconds"][("apace_ttfa_seconds_count", (("where", "browser"),))] == 1
    assert found["apace_endpoint_seconds"][("apace_endpoint_seconds_count", ())] == 2
    assert found["apace_ttft_seconds"][("apace_ttft_seconds_count", ())] == 1
    assert found["apace_ttft_seconds"][("apace_ttft_seconds_sum", ())] == pytest.approx(0.4)
    assert found["apace_turns"][("apace_turns_total", ())] == 2
    assert found["apace_barge_ins"][("apace_barge_ins_total", ())] == 1
    assert found["apace_asr_batches"][("apace_asr_batches_total", ())] == 3
    assert found["apace_asr_batched_jobs"][("apace_asr_batched_jobs_total", ())] == 7
    assert found["apace_speculation"][
        ("apace_speculation_total", (("outcome", "cancelled"),))] == 1
    assert found["apace_cache_hits"][("apace_cache_hits_total", (("cache", "tts"),))] == 5
    assert found["apace_cache_misses"][("apace_cache_misses_total", (("cache", "reply"),))] == 0
    assert found["apace_sessions"][("apace_sessions", ())] == 1
    assert found["apace_event_loop_lag_seconds"][("apace_event_loop_lag_seconds", ())] == 0.004


def test_counters_are_read_at_scrape_time() -> None:
    stats = EngineStats()
    metrics = Metrics(stats.snapshot, lambda: 0)
    stats.turns = 7
    assert _families(metrics)["apace_turns"][("apace_turns_total", ())] == 7


def test_each_app_has_its_own_registry() -> None:
    first, second = Metrics(EngineStats().snapshot, lambda: 0), Metrics(EngineStats().snapshot,
                                                                        lambda: 0)
    first.observe_turn({"ttft": 100.0})
    assert _families(second)["apace_ttft_seconds"][("apace_ttft_seconds_count", ())] == 0
