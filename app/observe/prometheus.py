"""`GET /metrics`: Prometheus text format from the server's own registry.

Latency histograms are observed when a turn is recorded (and TTFA in the browser when the
page reports it). Counters mirror `engine.stats` and are read at scrape time by a custom
collector, so there is one source of truth and nothing to keep in step. What a leak would
show — resident memory, open fds (process_*), threads, asyncio tasks, sessions — is read
at scrape time too.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

from pipeline.compute.degrade import Degradation
from pipeline.timeline import ASR_FINAL, ENDPOINT, TTFA_BROWSER, TTFA_SERVER, TTFT, TTUA

LATENCY_BUCKETS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0,
                   1.25, 1.5, 2.0, 2.5, 3.0, 5.0, 10.0)
"""Seconds. Dense around the 0.2-1 s region where the TTFA objective lives."""
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""What generate_latest writes; every Prometheus version reads it."""

Snapshot = Callable[[], Mapping[str, Any]]


class EngineCollector(Collector):
    """The engine's counters (pipeline/compute/stats.py) and live gauges, read at scrape time."""

    def __init__(self, snapshot: Snapshot, sessions: Callable[[], int],
                 loop_lag_ms: Callable[[], float | None]) -> None:
        self.snapshot = snapshot
        self.sessions = sessions
        self.loop_lag_ms = loop_lag_ms

    def collect(self) -> Iterator[Metric]:
        stats = self.snapshot()
        yield _counter("apace_turns", "Finished turns.", stats["turns"])
        yield _counter("apace_barge_ins", "Replies the user interrupted.", stats["barge_ins"])
        yield _counter("apace_llm_tokens", "LLM tokens generated for finished turns.",
                       stats["llm_tokens"])
        yield _counter("apace_asr_batches", "Transcriptions run as one batch of several "
                       "conversations' jobs due together.", stats["asr_batches"])
        yield _counter("apace_asr_batched_jobs", "Transcription jobs run in those batches.",
                       stats["asr_batched_jobs"])
        yield _counter("apace_reply_holds", "Replies held (quiet, nothing dropped) at the "
                       "first sign of the user talking over them.", stats["holds"])
        yield _counter("apace_reply_holds_released", "Held replies that went on: the speech "
                       "stopped short of a barge-in.", stats["holds_released"])
        yield _counter("apace_noisy_ear_replies", "Replies whose turn the noisy-room ear "
                       "heard (speculative ones included).", stats["noisy_ear_replies"])
        yield _counter("apace_heard_again_turns", "Finished turns a skill answered from the "
                       "second ear's words (no skill took the first ear's).", stats["heard_again"])
        degraded = CounterMetricFamily(
            "apace_degraded_turns", "Finished turns that gave something up under load, by "
            "kind (docs/scaling.md).", labels=["kind"])
        for kind in Degradation:
            degraded.add_metric([kind.value], stats["degraded"].get(kind.value, 0))
        yield degraded
        speculation = stats["speculation"]
        outcomes = CounterMetricFamily(
            "apace_speculation", "Speculative replies started at silence onset, by outcome.",
            labels=["outcome"])
        for outcome in ("started", "committed", "cancelled"):
            outcomes.add_metric([outcome], speculation[outcome])
        yield outcomes
        yield _counter("apace_speculation_reheard", "Speculations whose turn was transcribed "
                       "again after voice in the pause that did not resume it.",
                       speculation["reheard"])
        yield _counter("apace_speculation_reheard_kept", "Of those, kept: the same words.",
                       speculation["kept"])
        yield _counter("apace_speculation_wasted_tokens",
                       "LLM tokens spent on cancelled speculative replies.",
                       speculation["wasted_tokens"])
        yield _counter("apace_speculation_wasted_seconds",
                       "Time cancelled speculative replies ran before cancellation.",
                       speculation["wasted_ms"] / 1000.0)
        hits = CounterMetricFamily("apace_cache_hits", "Cache hits.", labels=["cache"])
        misses = CounterMetricFamily("apace_cache_misses", "Cache misses.", labels=["cache"])
        for cache in ("reply", "tts"):
            hits.add_metric([cache], stats[f"{cache}_cache"]["hits"])
            misses.add_metric([cache], stats[f"{cache}_cache"]["misses"])
        yield hits
        yield misses
        drafts = CounterMetricFamily("apace_draft_tokens", "Draft tokens, by outcome.",
                                     labels=["outcome"])
        drafts.add_metric(["proposed"], stats["draft"]["proposed"])
        drafts.add_metric(["accepted"], stats["draft"]["accepted"])
        yield drafts
        yield GaugeMetricFamily("apace_sessions", "Active WebRTC sessions.", value=self.sessions())
        lag = self.loop_lag_ms()
        if lag is not None:
            yield GaugeMetricFamily("apace_event_loop_lag_seconds",
                                    "Worst event-loop wake-up delay over the last few seconds.",
                                    value=lag / 1000.0)


class RuntimeCollector(Collector):
    """Threads, asyncio tasks and whether the server is draining, read at scrape time
    (process_resident_memory_bytes and process_open_fds come from ProcessCollector)."""

    def __init__(self, draining: Callable[[], bool]) -> None:
        self.draining = draining

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily("apace_threads", "Live threads.", value=threading.active_count())
        try:
            tasks = len(asyncio.all_tasks())
        except RuntimeError:  # scraped outside the server's loop (tests)
            tasks = 0
        yield GaugeMetricFamily("apace_asyncio_tasks", "Pending asyncio tasks.", value=tasks)
        yield GaugeMetricFamily("apace_draining", "1 while the server drains for shutdown.",
                                value=float(self.draining()))


class MemoryCollector(Collector):
    """The shared LLM's KV (reserved, held by conversations) and its batching, read at
    scrape time from the same report as the dashboard's (`Sessions.memory`)."""

    def __init__(self, memory: Callable[[], Mapping[str, Any]]) -> None:
        self.memory = memory

    def collect(self) -> Iterator[Metric]:
        memory = self.memory()
        llm = memory.get("llm")
        if not llm:
            return
        held = memory.get("kv_bytes_per_session", {})
        yield GaugeMetricFamily("apace_llm_kv_reserved_bytes",
                                "KV memory the shared LLM reserved for all conversations.",
                                value=llm["kv_bytes_reserved"])
        yield GaugeMetricFamily("apace_llm_kv_held_bytes",
                                "KV memory holding live sessions' histories.",
                                value=sum(held.values()))
        yield GaugeMetricFamily("apace_llm_conversations_held",
                                "Conversations whose history the shared LLM's KV holds.",
                                value=llm["conversations_held"])
        if llm.get("tokens_per_step") is not None:
            yield GaugeMetricFamily("apace_llm_tokens_per_step",
                                    "Tokens per batched decode step, on average.",
                                    value=llm["tokens_per_step"])


def _counter(name: str, documentation: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, documentation, value=value)


class Metrics:
    """apace's own registry (not the process-global one, so tests and several apps in one
    process never collide)."""

    def __init__(self, snapshot: Snapshot, sessions: Callable[[], int],
                 loop_lag_ms: Callable[[], float | None] = lambda: None,
                 draining: Callable[[], bool] = lambda: False,
                 memory: Callable[[], Mapping[str, Any]] | None = None) -> None:
        self.registry = CollectorRegistry()
        self.refused = Counter("apace_refused_requests", "Requests refused, by reason.",
                               ("reason",), registry=self.registry)
        """reason: access (host, origin, credential), input (a malformed request), full,
        draining."""
        self.ended = Counter("apace_sessions_ended", "Sessions ended, by reason.",
                             ("reason",), registry=self.registry)

        def histogram(name: str, what: str, labels: tuple[str, ...] = ()) -> Histogram:
            return Histogram(name, f"End of user speech to {what}.", labels,
                             buckets=LATENCY_BUCKETS, registry=self.registry)

        self.ttfa = histogram("apace_ttfa_seconds",
                              "the first reply audio: leaving the server, or playing in the "
                              "browser", ("where",))
        self.stages = {
            ENDPOINT: histogram("apace_endpoint_seconds", "the endpoint decision"),
            ASR_FINAL: histogram("apace_asr_final_seconds", "the final transcript"),
            TTFT: histogram("apace_ttft_seconds", "the first LLM token of the played reply"),
            TTUA: histogram("apace_ttua_seconds", "the first complete sentence sent"),
        }
        for where in ("server", "browser"):  # exported (count 0) before the first turn
            self.ttfa.labels(where=where)
        self.registry.register(EngineCollector(snapshot, sessions, loop_lag_ms))
        self.registry.register(RuntimeCollector(draining))
        if memory is not None:
            self.registry.register(MemoryCollector(memory))
        ProcessCollector(registry=self.registry)

    def observe_turn(self, timeline_ms: Mapping[str, float]) -> None:
        """A recorded turn: every latency it reached."""
        for name, histogram in self.stages.items():
            if (ms := timeline_ms.get(name)) is not None:
                histogram.observe(ms / 1000.0)
        if (ms := timeline_ms.get(TTFA_SERVER)) is not None:
            self.ttfa.labels(where="server").observe(ms / 1000.0)
        if (ms := timeline_ms.get(TTFA_BROWSER)) is not None:
            self.observe_heard(ms)

    def observe_heard(self, ttfa_browser_ms: float) -> None:
        self.ttfa.labels(where="browser").observe(ttfa_browser_ms / 1000.0)

    def render(self) -> bytes:
        return generate_latest(self.registry)
