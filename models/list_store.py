"""The list store (pipeline.skills.lists.ListStore) in the user's SQLite file, and where
that file is: the data dir from the environment. The same file as the timers
(models/timer_journal.py)."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

DB_NAME = "apace.sqlite3"


def default_data_dir() -> Path:
    """$APACE_DATA_DIR, else $XDG_DATA_HOME/apace, else ~/.local/share/apace."""
    if explicit := os.environ.get("APACE_DATA_DIR"):
        return Path(explicit).expanduser()
    if xdg := os.environ.get("XDG_DATA_HOME"):
        return Path(xdg).expanduser() / "apace"
    return Path.home() / ".local" / "share" / "apace"


def default_db_path() -> Path:
    """Where the lists live unless told otherwise: `default_data_dir()` / "apace.sqlite3"."""
    return default_data_dir() / DB_NAME


class ListStoreError(RuntimeError):
    """The list database cannot be opened or read; the message says which file and the fix."""

    def __init__(self, path: Path, cause: BaseException) -> None:
        super().__init__(
            f"cannot use the list database {path}: {cause}. If the file is damaged, move it "
            f"aside (mv '{path}' '{path}.broken') and apace starts a new one; or set "
            "APACE_DATA_DIR to another folder."
        )
        self.path = path


_SCHEMA = """
CREATE TABLE IF NOT EXISTS list_items (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    owner TEXT NOT NULL,
    list TEXT NOT NULL,
    item TEXT NOT NULL COLLATE NOCASE,
    UNIQUE (owner, list, item)
)
"""


class SqliteListStore:
    """Items per (owner, list name), in insertion order, no duplicates (case-insensitive).

    One connection shared by threads under a lock: calls are tiny and rare, and the lock
    keeps a commit from one thread out of another's transaction.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, check_same_thread=False)
            with self._db:
                self._db.execute(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise ListStoreError(path, exc) from exc

    def add(self, owner: str, list_name: str, items: Sequence[str]) -> list[str]:
        """Add `items` not already there; returns those added."""
        added = []
        with self._transaction() as db:
            for item in items:
                cur = db.execute(
                    "INSERT OR IGNORE INTO list_items (owner, list, item) VALUES (?, ?, ?)",
                    (owner, list_name, item),
                )
                if cur.rowcount:
                    added.append(item)
        return added

    def remove(self, owner: str, list_name: str, items: Sequence[str]) -> list[str]:
        """Remove `items`; returns those that were there."""
        removed = []
        with self._transaction() as db:
            for item in items:
                cur = db.execute(
                    "DELETE FROM list_items WHERE owner = ? AND list = ? AND item = ?",
                    (owner, list_name, item),
                )
                if cur.rowcount:
                    removed.append(item)
        return removed

    def items(self, owner: str, list_name: str) -> list[str]:
        with self._transaction() as db:
            rows = db.execute(
                "SELECT item FROM list_items WHERE owner = ? AND list = ? ORDER BY seq",
                (owner, list_name),
            ).fetchall()
        return [row[0] for row in rows]

    def clear(self, owner: str, list_name: str) -> int:
        """Empty the list; returns how many items it had."""
        with self._transaction() as db:
            cur = db.execute(
                "DELETE FROM list_items WHERE owner = ? AND list = ?", (owner, list_name)
            )
        return cur.rowcount

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """The connection, under the lock, in a transaction; sqlite errors become ours."""
        with self._lock:
            try:
                with self._db:
                    yield self._db
            except sqlite3.Error as exc:
                raise ListStoreError(self.path, exc) from exc
