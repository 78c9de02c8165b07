"""What is running: timers, alarms and reminders on the pipeline's monotonic clock.

Pure and thread-safe, no I/O: whoever rings them (the session's bell) sleeps until
`next_due()`, then speaks `ring_text` for each of `pop_due(now)`. A paused timer keeps its
time left and is never due until it is resumed.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Literal, Protocol

Kind = Literal["timer", "alarm", "reminder"]


@dataclass(frozen=True, kw_only=True)
class Timer:
    """One running (or paused) timer, alarm or reminder."""

    id: int
    kind: Kind
    name: str | None
    """What the user called it ("pasta"), or None."""
    label: str
    """What it is called when it rings: "pasta timer", "10 minute timer", "call your mom"."""
    due: float
    """When it rings, on the monotonic clock (`pipeline.timeline.now()`); while paused, the
    due time it had when it was paused (meaningless until resumed)."""
    wall: datetime
    """When it rings, as local wall-clock time (for "your alarm for 7 AM")."""
    duration_s: float
    """The length it was set for: "the 10 minute timer" stays that one after "add 5 minutes"."""
    paused_left: float | None = None
    """Seconds left, while paused; None while it runs."""
    key: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Its name in a `Journal`, the same across restarts (`id` is per store)."""

    @property
    def paused(self) -> bool:
        return self.paused_left is not None


class Journal(Protocol):
    """Where a store writes its timers down, so that a restart loses none
    (`models.timer_journal`). Called after each change, outside the store's lock."""

    def keep(self, timers: Iterable[Timer]) -> None:
        """Write these timers (new or changed) down."""
        ...

    def drop(self, keys: Iterable[str]) -> None:
        """These timers rang or were cancelled: forget them."""
        ...


class TimerKeeper(Protocol):
    """Every owner's written-down timers (`models.timer_journal.TimerJournal`): a live
    conversation holds its owner's, so that two never ring the same timer."""

    def bound(self, owner: str, holder: str) -> Journal:
        """Where `holder`'s store writes its timers."""
        ...

    def adopt(self, owner: str, holder: str, *, monotonic: float, wall: datetime) -> list[Timer]:
        """`owner`'s timers nobody holds, now `holder`'s, due on the monotonic clock."""
        ...

    def release(self, holder: str) -> None:
        """`holder` closed: its timers wait for the owner's next conversation."""
        ...

    def close(self) -> None: ...


class Timers:
    """What is running. Thread-safe so a skill may read it from a worker thread.

    `on_change` is called (in the caller's thread) after every change, so the ringer can
    re-arm its sleep on the new `next_due()`.
    """

    def __init__(self, *, on_change: Callable[[], None] | None = None,
                 journal: Journal | None = None, rings: bool = True) -> None:
        self._timers: dict[int, Timer] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._on_change = on_change
        self._journal = journal
        self.rings = rings
        """False where nothing can ring them (a text-only way in whose client closes the
        exchange after each reply: Wyoming's handle); the skill then says so."""

    def add(
        self,
        kind: Kind,
        due: float,
        label: str,
        name: str | None,
        wall: datetime,
        *,
        duration_s: float = 0.0,
    ) -> Timer:
        with self._lock:
            timer = Timer(
                id=next(self._ids), kind=kind, name=name, label=label, due=due, wall=wall,
                duration_s=duration_s,
            )
            self._timers[timer.id] = timer
        self._changed(kept=[timer])
        return timer

    def restore(self, timers: Iterable[Timer]) -> list[Timer]:
        """Take back timers written down before a restart (`Journal`), with ids of this
        store; their `due` already on this process's monotonic clock."""
        with self._lock:
            back = [replace(t, id=next(self._ids)) for t in timers]
            self._timers.update((t.id, t) for t in back)
        if back:
            self._changed()
        return back

    def cancel(self, name: str | None, *, kind: Kind | None = None) -> list[Timer]:
        """Remove the timers called `name` (all when None), of `kind` when given."""
        with self._lock:
            gone = [
                t for t in self._timers.values()
                if (name is None or t.name == name) and (kind is None or t.kind == kind)
            ]
            for timer in gone:
                del self._timers[timer.id]
        if gone:
            self._changed(dropped=gone)
        return sorted(gone, key=_order)

    def discard(self, ids: list[int]) -> list[Timer]:
        """Remove exactly these timers (those still running); what a cancel reply chose."""
        with self._lock:
            gone = [self._timers.pop(i) for i in ids if i in self._timers]
        if gone:
            self._changed(dropped=gone)
        return gone

    def pause(self, ids: list[int], now: float) -> list[Timer]:
        """Stop these timers' clocks, keeping the time each has left."""
        return self._update(ids, lambda t: t if t.paused else replace(
            t, paused_left=max(0.0, t.due - now)))

    def resume(self, ids: list[int], now: float) -> list[Timer]:
        """Start paused timers' clocks again from the time they had left."""
        return self._update(ids, lambda t: t if t.paused_left is None else replace(
            t, due=now + t.paused_left, paused_left=None,
            wall=t.wall + timedelta(seconds=now + t.paused_left - t.due)))

    def adjust(self, ids: list[int], seconds: float, now: float) -> list[Timer]:
        """Add `seconds` (take away, when negative) to these timers' time left; one taken
        below nothing is due at once (it rings)."""
        def moved(t: Timer) -> Timer:
            if t.paused_left is not None:
                return replace(t, paused_left=max(0.0, t.paused_left + seconds))
            due = max(now, t.due + seconds)
            return replace(t, due=due, wall=t.wall + timedelta(seconds=due - t.due))

        return self._update(ids, moved)

    def active(self) -> list[Timer]:
        """Everything set (running or paused), soonest first."""
        with self._lock:
            return sorted(self._timers.values(), key=_order)

    def next_due(self) -> float | None:
        with self._lock:
            return min((t.due for t in self._timers.values() if not t.paused), default=None)

    def pop_due(self, now: float) -> list[Timer]:
        """Remove and return the running timers due at `now`, in the order they fell due."""
        with self._lock:
            due = sorted((t for t in self._timers.values() if t.due <= now and not t.paused),
                         key=_order)
            for timer in due:
                del self._timers[timer.id]
        if due and self._journal is not None:
            self._journal.drop(t.key for t in due)
        return due

    @staticmethod
    def remaining(timer: Timer, now: float) -> float:
        if timer.paused_left is not None:
            return timer.paused_left
        return max(0.0, timer.due - now)

    def _update(self, ids: list[int], change: Callable[[Timer], Timer]) -> list[Timer]:
        with self._lock:
            changed = [change(self._timers[i]) for i in ids if i in self._timers]
            for timer in changed:
                self._timers[timer.id] = timer
        if changed:
            self._changed(kept=changed)
        return changed

    def _changed(self, *, kept: Sequence[Timer] = (), dropped: Sequence[Timer] = ()) -> None:
        if self._journal is not None:
            if kept:
                self._journal.keep(kept)
            if dropped:
                self._journal.drop(t.key for t in dropped)
        if self._on_change is not None:
            self._on_change()


def _order(timer: Timer) -> tuple[float, int]:
    return timer.due, timer.id
