"""Timers written down in sqlite, so that a restart (or a closed page) loses none.

The same database file as the lists (the user's data dir). Each row is one timer of an
owner; `holder` is the live conversation that rings it. A conversation adopts its owner's
timers nobody holds when it opens and lets go of them when it closes, so two
conversations of one owner never ring the same timer; at start-up no conversation of an
earlier process is live, so every timer is let go (`release_all`). A timer that fell due
while nothing held it rings as soon as a conversation adopts it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from pipeline.skills.timer_store import Timer

_SCHEMA = """
CREATE TABLE IF NOT EXISTS timers (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    holder TEXT,
    kind TEXT NOT NULL,
    name TEXT,
    label TEXT NOT NULL,
    wall REAL NOT NULL,
    duration_s REAL NOT NULL,
    paused_left REAL
)
"""
_COLUMNS = "key, kind, name, label, wall, duration_s, paused_left"


class TimerJournal:
    """All owners' timers in one sqlite file; one connection shared under a lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False)
        with self._db:
            self._db.execute(_SCHEMA)

    def release_all(self) -> None:
        """A new process: no conversation holds anything any more."""
        with self._transaction() as db:
            db.execute("UPDATE timers SET holder = NULL")

    def adopt(self, owner: str, holder: str, *, monotonic: float, wall: datetime) -> list[Timer]:
        """`owner`'s timers no live conversation holds, now held by `holder`, with their
        due times on this process's monotonic clock (`monotonic` is `wall`, now)."""
        with self._transaction() as db:
            db.execute("UPDATE timers SET holder = ? WHERE owner = ? AND holder IS NULL",
                       (holder, owner))
            rows = db.execute(f"SELECT {_COLUMNS} FROM timers WHERE holder = ?",
                              (holder,)).fetchall()
        return [_timer(row, monotonic, wall) for row in rows]

    def release(self, holder: str) -> None:
        """`holder`'s conversation closed: its timers wait for the owner's next one."""
        with self._transaction() as db:
            db.execute("UPDATE timers SET holder = NULL WHERE holder = ?", (holder,))

    def bound(self, owner: str, holder: str) -> HeldTimers:
        """The `Journal` one conversation's store writes to."""
        return HeldTimers(self, owner, holder)

    def keep(self, owner: str, holder: str, timers: Iterable[Timer]) -> None:
        with self._transaction() as db:
            db.executemany(
                f"INSERT OR REPLACE INTO timers (owner, holder, {_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(owner, holder, t.key, t.kind, t.name, t.label, t.wall.timestamp(),
                  t.duration_s, t.paused_left) for t in timers])

    def drop(self, keys: Iterable[str]) -> None:
        with self._transaction() as db:
            db.executemany("DELETE FROM timers WHERE key = ?", [(key,) for key in keys])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._db:
            yield self._db


class HeldTimers:
    """One conversation's side of the journal (`pipeline.skills.timer_store.Journal`)."""

    def __init__(self, journal: TimerJournal, owner: str, holder: str) -> None:
        self._journal, self.owner, self.holder = journal, owner, holder

    def keep(self, timers: Iterable[Timer]) -> None:
        self._journal.keep(self.owner, self.holder, timers)

    def drop(self, keys: Iterable[str]) -> None:
        self._journal.drop(keys)


def _timer(row: tuple[str, str, str | None, str, float, float, float | None],
           monotonic: float, now: datetime) -> Timer:
    key, kind, name, label, wall, duration_s, paused_left = row
    due = monotonic + (paused_left if paused_left is not None else wall - now.timestamp())
    return Timer(id=0, key=key, kind=kind, name=name, label=label,  # type: ignore[arg-type]
                 due=due, wall=datetime.fromtimestamp(wall).astimezone(now.tzinfo),
                 duration_s=duration_s, paused_left=paused_left)
