"""A stream's gate: when the model making a reply may take its next step.

Two things close it. The reply's first clause is being made into audio (`close` till
`open`): on 2 cores the CPU is the speech's, and a decode step under way when the clause
is asked for is ~55 ms added to the first audio. And, in lockstep, the reader has not yet
seen the last item handed to it (`handed` till `seen`): the producer is never a step
ahead, so the step that would start as clause 1 is written does not start — the reader
closes the gate first. Lockstep is for the few tokens before the first clause; the reader
ends it there (`end_lockstep`).

Producers (a model worker's thread, the shared LLM's decoding thread) ask `is_open` or
`wait`; whoever waits for it elsewhere is told by `on_change` (the shared LLM wakes).
Each closing has a timeout, after which the gate counts as open: a reader that went away
never stalls a producer for long.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

READER_TIMEOUT_S = 0.25
"""How long a producer in lockstep waits for its reader before it goes on anyway."""


class Gate:
    """Lets one stream pause between items while another job needs the CPU, or (in
    lockstep) until its reader has taken the last item."""

    def __init__(self, timeout_s: float = 1.0, *, lockstep: bool = False,
                 reader_timeout_s: float = READER_TIMEOUT_S) -> None:
        self._open = threading.Event()
        self._open.set()
        self._closed_at = 0.0
        self.timeout_s = timeout_s
        self.lockstep = lockstep
        """Each item handed waits for the reader (`seen`) before the next is made."""
        self._seen = threading.Event()
        self._seen.set()
        self._handed_at = 0.0
        self.reader_timeout_s = reader_timeout_s
        self._listeners: list[Callable[[], None]] = []

    def close(self) -> None:
        self._closed_at = time.monotonic()
        self._open.clear()

    def open(self) -> None:
        self._open.set()
        self._changed()

    def handed(self) -> None:
        """A producer handed the reader an item: in lockstep, it waits till `seen`."""
        if self.lockstep:
            self._handed_at = time.monotonic()
            self._seen.clear()

    def seen(self) -> None:
        """The reader is done with the last item handed."""
        if not self._seen.is_set():
            self._seen.set()
            self._changed()

    def end_lockstep(self) -> None:
        """From now on the producer may run ahead of its reader."""
        self.lockstep = False
        self.seen()

    @property
    def awaiting_reader(self) -> bool:
        """In lockstep, an item was handed and is not seen yet (within the timeout)."""
        return not self._seen.is_set() and self._since(self._handed_at) < self.reader_timeout_s

    def awaited_s(self) -> float:
        """How long the item not yet seen has waited for its reader (0: none)."""
        return 0.0 if self._seen.is_set() else self._since(self._handed_at)

    @property
    def is_open(self) -> bool:
        """Open, or closed for longer than the timeout (as a waiter would go on)."""
        spoken = self._open.is_set() or self._since(self._closed_at) >= self.timeout_s
        return spoken and not self.awaiting_reader

    def wait(self) -> None:
        self._seen.wait(self.reader_timeout_s)
        self._open.wait(self.timeout_s)

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call `listener` (from any thread) whenever the gate may have opened."""
        if listener not in self._listeners:
            self._listeners.append(listener)

    def _changed(self) -> None:
        for listener in list(self._listeners):
            listener()

    @staticmethod
    def _since(moment: float) -> float:
        return time.monotonic() - moment
