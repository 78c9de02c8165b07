"""OpenMP settings for the model libraries, applied before any of them is loaded.

llama.cpp (and CTranslate2) run their threads as OpenMP teams, and ggml waits at an
OpenMP barrier after every operation. libgomp keeps one team per calling thread; once
the process holds more OpenMP threads than there are CPUs — a second llama context (the
turn detector, a second user's conversation), each in its own worker — it spins only 100
times at a barrier before sleeping on a futex, and every barrier of every token pays a
wake-up: measured 11.5 → 31 ms per token of the reply, with the turn detector's context
merely present. OMP_WAIT_POLICY=ACTIVE raises that throttled spin to 1000 (12 ms per token
again); GOMP_SPINCOUNT=300000 keeps the normal case at libgomp's own default instead of
ACTIVE's 30 billion (which would keep idle teams burning a core for seconds).
A value the user set wins.
"""

from __future__ import annotations

import os

SETTINGS = {"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": "300000"}


def tune() -> None:
    for name, value in SETTINGS.items():
        os.environ.setdefault(name, value)
