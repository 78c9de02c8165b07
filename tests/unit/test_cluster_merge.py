"""What the cluster's ingress serves from its nodes (app.cluster.merge)."""

from __future__ import annotations

from app.cluster.merge import merge_numbers, merged_metrics, merged_stats, node_turns


def _turn(session: int, turn: int, ttfa: float) -> dict:
    return {"session": session, "turn": turn, "timeline_ms": {"ttfa_server": ttfa}}


def test_sessions_are_named_by_node_so_equal_ids_stay_apart() -> None:
    turns = node_turns({"b": [_turn(1, 1, 500.0)], "a": [_turn(1, 1, 700.0)]})
    assert [(t["node"], t["session"]) for t in turns] == [("a", "a:1"), ("b", "b:1")]


def test_stats_take_percentiles_over_every_nodes_turns_and_sum_counters() -> None:
    turns = node_turns({"a": [_turn(1, 1, 500.0), _turn(1, 2, 900.0)],
                        "b": [_turn(1, 1, 700.0)]})
    stats = merged_stats(
        {"a": {"engine": {"turns": 2, "draft": {"acceptance": 0.5}}, "sessions": 1,
               "loop_lag_ms": {"last": 1.0, "max": 9.0}, "memory": {"rss_bytes": 10}},
         "b": {"engine": {"turns": 1, "draft": {"acceptance": 0.7}}, "sessions": 2,
               "loop_lag_ms": {"last": 3.0, "max": 4.0}, "memory": {"rss_bytes": 5}}},
        turns, [{"node": "a"}, {"node": "b"}], 800.0)
    assert stats["latency"]["ttfa_server"]["p50"] == 700.0
    assert stats["slo"]["count"] == 3 and stats["slo"]["met"] == 2
    assert stats["engine"]["turns"] == 3
    assert abs(stats["engine"]["draft"]["acceptance"] - 0.6) < 1e-9
    assert stats["sessions"] == 3 and stats["loop_lag_ms"] == {"last": 3.0, "max": 9.0}
    assert stats["memory"]["rss_bytes"] == 15 and len(stats["nodes"]) == 2


def test_merge_numbers_keeps_what_is_not_a_number() -> None:
    assert merge_numbers([{"x": "q", "n": 1}, {"x": "r", "n": None}]) == {"n": 1, "x": "q"}
    assert merge_numbers([None, None]) is None


def test_every_sample_is_labelled_with_its_node_and_each_help_line_kept_once() -> None:
    text = (b'# HELP apace_turns_total Turns.\n# TYPE apace_turns_total counter\n'
            b'apace_turns_total 3.0\napace_ttfa_bucket{le="0.5"} 1.0\n')
    merged = merged_metrics({"b": text, "a": text}).decode().splitlines()
    assert merged.count("# HELP apace_turns_total Turns.") == 1
    assert 'apace_turns_total{node="a"} 3.0' in merged
    assert 'apace_ttfa_bucket{node="b",le="0.5"} 1.0' in merged
    assert len([line for line in merged if not line.startswith("#")]) == 4


def test_degraded_turns_are_summed_by_kind_and_each_turn_keeps_its_tags() -> None:
    """What a turn gave up under load (docs/scaling.md) survives the cluster's merge."""
    assert merge_numbers([{"degraded": {"short": 1}},
                          {"degraded": {"short": 2, "one-moment": 1}}]) == {
        "degraded": {"one-moment": 1, "short": 3}}
    turns = node_turns({"a": [{**_turn(1, 1, 900.0), "degraded": ["short"]}]})
    assert turns[0]["degraded"] == ["short"]
    text = merged_metrics({"a": b'apace_degraded_turns_total{kind="short"} 2.0\n'}).decode()
    assert 'apace_degraded_turns_total{node="a",kind="short"} 2.0' in text
