"""Admission from measured load: would one more conversation break the TTFA objective?

On one box every conversation's turn waits for the same CPU. The server measures two
things as it runs: how busy the CPU is (the share of wall time some model held the CPU
lock, pipeline.compute.workers.CpuLock) and what TTFA its turns got (p95 over recent turns).
A queue's waiting time grows as 1 / (1 - busy): with `n` sessions making the CPU busy
`rho`, one more makes it about `rho (n + 1) / n`, and the TTFA it predicts is the
measured p95 scaled by (1 - rho) / (1 - rho'). A new session is refused when that
exceeds the objective — before the sessions already admitted are pushed past it.
Nothing measured yet (a quiet server, a first user) is no reason to refuse.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    admit: bool
    predicted_ms: float | None
    """The TTFA p95 predicted with one more session (None: too little measured)."""
    busy: float | None
    """The CPU's busy share over the window."""
    reason: str = ""


class LoadModel:
    """Recent TTFAs and CPU busy time, and the verdict on one more session."""

    def __init__(self, objective_ms: float, *, window_s: float = 120.0,
                 min_turns: int = 5, max_busy: float = 0.95) -> None:
        self.objective_ms = objective_ms
        self.window_s = window_s
        self.min_turns = min_turns
        self.max_busy = max_busy
        self._turns: deque[tuple[float, float]] = deque()
        self._busy: deque[tuple[float, float]] = deque()

    def turn(self, t: float, ttfa_ms: float) -> None:
        """A turn's TTFA, measured at time `t` (seconds, any monotonic clock)."""
        self._turns.append((t, ttfa_ms))
        self._trim(t)

    def busy_total(self, t: float, busy_s: float) -> None:
        """The CPU lock's total held time so far, sampled at `t`."""
        self._busy.append((t, busy_s))
        self._trim(t)

    def busy_share(self) -> float | None:
        if len(self._busy) < 2:
            return None
        (t0, b0), (t1, b1) = self._busy[0], self._busy[-1]
        return min(1.0, max(0.0, (b1 - b0) / (t1 - t0))) if t1 - t0 >= 5.0 else None

    def p95_ms(self) -> float | None:
        values = sorted(ms for _, ms in self._turns)
        if len(values) < self.min_turns:
            return None
        return values[min(len(values) - 1, math.ceil(0.95 * len(values)) - 1)]

    def verdict(self, sessions: int) -> Verdict:
        """Whether a new session may join the `sessions` already admitted."""
        busy, p95 = self.busy_share(), self.p95_ms()
        if sessions < 1 or busy is None or p95 is None:
            return Verdict(True, None, busy)
        after = busy * (sessions + 1) / sessions
        if after >= self.max_busy:
            return Verdict(False, math.inf, busy, f"the CPU is {busy:.0%} busy with {sessions} "
                           f"session(s); one more would saturate it")
        predicted = p95 * (1 - busy) / (1 - after)
        if predicted > self.objective_ms:
            return Verdict(False, predicted, busy,
                           f"one more session would push the reply delay (p95) to about "
                           f"{predicted:.0f} ms, over the {self.objective_ms:.0f} ms objective")
        return Verdict(True, predicted, busy)

    def _trim(self, t: float) -> None:
        for series in (self._turns, self._busy):
            while len(series) > 1 and series[0][0] < t - self.window_s:
                series.popleft()
