"""Latency statistics for the dashboard: percentiles, SLO attainment, waterfalls, loop lag.

Pure arithmetic over the turn records the server keeps (`timeline_ms` dicts, milliseconds
from the end of the user's speech), so it is tested without a server or an event loop —
except `LoopLag`, the one small task that measures the loop itself.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pipeline.timeline import METRICS, SPEECH_END, TTFA_BROWSER, TTFA_SERVER, TTFT, TTUA, Timeline

SUMMARIZED = (TTFA_BROWSER, TTFA_SERVER, TTFT, TTUA)
"""The metrics the dashboard shows rolling percentiles for."""
QUANTILES = {"p50": 0.50, "p95": 0.95, "p99": 0.99}


def percentile(values: Sequence[float], q: float) -> float | None:
    """The `q`-quantile (0..1) by linear interpolation between order statistics (numpy's
    default), so p50 of two turns is their mean rather than an arbitrary one of them."""
    if not values:
        return None
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be within 0..1, got {q}")
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(values: Sequence[float]) -> dict[str, float | int | None]:
    """count, p50, p95 and p99 (None without values), rounded to 0.1 ms."""
    out: dict[str, float | int | None] = {"count": len(values)}
    for name, q in QUANTILES.items():
        value = percentile(values, q)
        out[name] = None if value is None else round(value, 1)
    return out


def ttfa_ms(timeline_ms: Mapping[str, float]) -> float | None:
    """The turn's TTFA: the browser's ground truth where the page reported it, else the
    server's (a client without a page, such as `apace bench`, never reports one)."""
    value = timeline_ms.get(TTFA_BROWSER)
    return timeline_ms.get(TTFA_SERVER) if value is None else value


def slo_attainment(values: Iterable[float], objective_ms: float) -> dict[str, Any]:
    """How many turns met the TTFA objective (at or under it)."""
    measured = list(values)
    met = sum(1 for value in measured if value <= objective_ms)
    return {"objective_ms": objective_ms, "met": met, "count": len(measured),
            "attainment": met / len(measured) if measured else None}


def latency_summary(turns: Iterable[Mapping[str, Any]], objective_ms: float) -> dict[str, Any]:
    """Rolling percentiles over the given turn records, and SLO attainment on TTFA."""
    timelines = [turn["timeline_ms"] for turn in turns]
    latency = {
        name: summarize([t[name] for t in timelines if t.get(name) is not None])
        for name in SUMMARIZED
    }
    ttfas = [value for t in timelines if (value := ttfa_ms(t)) is not None]
    return {"latency": latency, "slo": slo_attainment(ttfas, objective_ms)}


def waterfall(timeline_ms: Mapping[str, float]) -> list[dict[str, Any]]:
    """The turn's waterfall: consecutive stamps in time order from the end of speech, each
    bar from the previous stamp to its own, so the bars sum to the latest stamp.

    Built with `Timeline.stages`, so the dashboard draws exactly the pipeline's semantics.
    """
    reached = [name for name in METRICS if timeline_ms.get(name) is not None]
    if not reached:
        return []
    # The latest stamp closes the axis; on a tie, the one later in pipeline order does.
    until = max(reached, key=lambda name: (timeline_ms[name], METRICS.index(name)))
    timeline = Timeline(stamps={SPEECH_END: 0.0})
    for name in reached:
        timeline.stamp(name, timeline_ms[name] / 1000.0)
    return [{"name": stage.name, "start_ms": round(stage.start_ms, 1),
             "end_ms": round(stage.end_ms, 1)} for stage in timeline.stages(until)]


class LoopLag:
    """How late the event loop wakes a sleeper. Every session's audio pacing and every
    data-channel message waits behind whatever blocks the loop, so this is the first
    number to look at when latency drifts up under load."""

    def __init__(self, *, interval_s: float = 0.1, window: int = 50) -> None:
        self.interval_s = interval_s
        self.samples: deque[float] = deque(maxlen=window)

    def record(self, lag_s: float) -> None:
        self.samples.append(max(0.0, lag_s))

    def summary(self) -> dict[str, float | None]:
        """The latest and the worst lag over the window (about 5 s), in ms."""
        if not self.samples:
            return {"last": None, "max": None}
        return {"last": round(self.samples[-1] * 1000, 2),
                "max": round(max(self.samples) * 1000, 2)}

    async def run(self) -> None:
        """Measure until cancelled (cancel-safe: it holds nothing)."""
        loop = asyncio.get_running_loop()
        while True:
            start = loop.time()
            await asyncio.sleep(self.interval_s)
            self.record(loop.time() - start - self.interval_s)
