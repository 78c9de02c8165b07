"""The nodes' turns, statistics and Prometheus metrics merged into one cluster's view
(pure functions: what the ingress serves on /api/turns, /api/stats and /metrics)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from app.observe.metrics import latency_summary

AVERAGED = {"acceptance", "llm_tokens_per_s", "tokens_per_step", "hit_rate"}
"""Engine figures that are rates: the cluster shows their mean over nodes, not a sum."""


def node_turns(per_node: Mapping[str, Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every node's recent turns; a session is named `node:id` (ids repeat across nodes)."""
    return [{**turn, "node": node, "session": f"{node}:{turn['session']}"}
            for node, turns in sorted(per_node.items()) for turn in turns]


def merged_stats(per_node: Mapping[str, dict[str, Any]], turns: Sequence[dict[str, Any]],
                 nodes: list[dict[str, Any]], objective_ms: float) -> dict[str, Any]:
    """The dashboard's statistics for the whole cluster: percentiles over every node's
    turns, engine counters summed (rates averaged), the worst loop lag, sessions summed,
    and each node's own line."""
    stats = list(per_node.values())
    lags = [s["loop_lag_ms"] for s in stats if s.get("loop_lag_ms")]
    return {
        **latency_summary(turns, objective_ms),
        "engine": merge_numbers([s["engine"] for s in stats if "engine" in s]),
        "loop_lag_ms": {key: max((lag[key] for lag in lags if lag.get(key) is not None),
                                 default=None) for key in ("last", "max")},
        "sessions": sum(s.get("sessions", 0) for s in stats),
        "dashboards": 0, "dashboards_dropped": 0, "window": len(turns),
        "memory": {"rss_bytes": sum(s.get("memory", {}).get("rss_bytes") or 0 for s in stats)},
        "nodes": nodes,
    }


def merge_numbers(values: Sequence[Any], key: str = "") -> Any:
    """Numbers summed (or, for a rate named in AVERAGED, averaged) leaf by leaf through
    nested dicts; anything else is the first node's."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    first = present[0]
    if isinstance(first, dict):
        keys = {k for v in present if isinstance(v, dict) for k in v}
        return {k: merge_numbers([v.get(k) for v in present if isinstance(v, dict)], k)
                for k in sorted(keys)}
    numbers = [v for v in present if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) != len(present):
        return first
    return sum(numbers) / len(numbers) if key in AVERAGED else sum(numbers)


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?(\s.*)$")


def merged_metrics(per_node: Mapping[str, bytes]) -> bytes:
    """One Prometheus exposition of every node's, each sample labelled `node="NAME"`;
    each HELP/TYPE line once."""
    lines: list[str] = []
    described: set[str] = set()
    for node, text in sorted(per_node.items()):
        label = f'node="{_escape(node)}"'
        for line in text.decode().splitlines():
            if line.startswith("#"):
                if line not in described:
                    described.add(line)
                    lines.append(line)
                continue
            match = _SAMPLE.match(line)
            if match is None:
                continue
            name, labels, rest = match.groups()
            inner = labels[1:-1] if labels else ""
            lines.append(f"{name}{{{label}{',' if inner else ''}{inner}}}{rest}")
    return ("\n".join(lines) + "\n").encode()


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
