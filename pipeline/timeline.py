"""The per-turn timeline: every stage stamps one clock, so the stages add up.

Stamps are absolute seconds on `now()` (a monotonic clock). Reported values are
milliseconds from the end of the user's speech, the origin of every latency metric.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

now = time.monotonic

# The metric stamps, in the order a sequential pipeline reaches them (docs/how-it-works.md).
SPEECH_END = "speech_end"
ENDPOINT = "endpoint"
ASR_FINAL = "asr_final"
VERDICT = "verdict"
"""The turn detector's verdict is in (turns it judged)."""
LLM_START = "llm_start"
"""The LLM worker took the reply: the wait before it is the queue's (LLM turns)."""
TTFT = "ttft"
FIRST_CLAUSE = "first_clause"
TTFA_SERVER = "ttfa_server"
TTFA_BROWSER = "ttfa_browser"
TTUA = "ttua"
METRICS = (ENDPOINT, ASR_FINAL, VERDICT, LLM_START, TTFT, FIRST_CLAUSE, TTFA_SERVER, TTFA_BROWSER,
           TTUA)


@dataclass(frozen=True)
class Stage:
    """One bar of the waterfall: from the previous stamp to `name`."""

    name: str
    start_ms: float
    end_ms: float

    @property
    def ms(self) -> float:
        return self.end_ms - self.start_ms


@dataclass
class Timeline:
    """Stamps for one turn. The first stamp of a name wins; later ones are ignored."""

    turn: int = 0
    stamps: dict[str, float] = field(default_factory=dict)

    def stamp(self, name: str, t: float | None = None) -> float:
        """Record `name` at `t` (default: now) unless already recorded; returns the stamp."""
        return self.stamps.setdefault(name, now() if t is None else t)

    def with_stamp(self, name: str, t: float) -> Timeline:
        """A copy with `name` at `t` added (unless already recorded): a finished turn's
        timeline is not changed in place."""
        return Timeline(self.turn, {**self.stamps, name: self.stamps.get(name, t)})

    def has(self, name: str) -> bool:
        return name in self.stamps

    def ms(self, name: str) -> float | None:
        """Milliseconds from the end of speech to `name`, or None if not reached."""
        if name not in self.stamps or SPEECH_END not in self.stamps:
            return None
        return (self.stamps[name] - self.stamps[SPEECH_END]) * 1000.0

    def relative_ms(self) -> dict[str, float]:
        """Every metric reached, in ms from the end of speech."""
        out = {}
        for name in METRICS:
            value = self.ms(name)
            if value is not None:
                out[name] = round(value, 1)
        return out

    def stages(self, until: str = TTFA_SERVER) -> list[Stage]:
        """The waterfall up to `until`: consecutive stamps in time order from speech end.

        The bars tile the axis with no gap or overlap, so they sum to `ms(until)`.
        """
        end = self.ms(until)
        if end is None:
            return []
        points = sorted(
            (ms, name)
            for name in METRICS
            if (ms := self.ms(name)) is not None and name != until and ms <= end
        )
        stages, start = [], 0.0
        for ms, name in [*points, (end, until)]:
            stages.append(Stage(name, start, max(start, ms)))
            start = max(start, ms)
        return stages
