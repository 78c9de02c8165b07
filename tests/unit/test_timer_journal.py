"""Timers written down in sqlite come back after a restart: with the time they had left,
paused if they were, at once if they fell due meanwhile, and to one conversation only."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from models.timer_journal import TimerJournal
from pipeline.skills import Timers
from pipeline.speaker import Speaker
from tests.transports import fake_engine

LONDON = ZoneInfo("Europe/London")
NOW = datetime(2024, 5, 1, 8, 0, tzinfo=LONDON)


def set_pizza(journal: TimerJournal, holder: str = "first", seconds: float = 600) -> Timers:
    timers = Timers(journal=journal.bound("ann", holder))
    timers.add("timer", 1000.0 + seconds, "pizza timer", "pizza", NOW + timedelta(seconds=seconds),
               duration_s=seconds)
    return timers


def restart(path: Path, *, after_s: float, holder: str = "second") -> list[float]:
    """A new process `after_s` later, on another monotonic clock: time left of each timer."""
    journal = TimerJournal(path)
    journal.release_all()
    timers = Timers(journal=journal.bound("ann", holder))
    timers.restore(journal.adopt("ann", holder, monotonic=50.0, wall=NOW + timedelta(seconds=after_s)))
    return [round(Timers.remaining(t, 50.0)) for t in timers.active()]


def test_a_running_timer_comes_back_with_the_time_it_has_left(tmp_path: Path) -> None:
    set_pizza(TimerJournal(tmp_path / "db.sqlite3"))
    assert restart(tmp_path / "db.sqlite3", after_s=100) == [500]


def test_a_paused_timer_comes_back_paused(tmp_path: Path) -> None:
    timers = set_pizza(TimerJournal(tmp_path / "db.sqlite3"))
    [pizza] = timers.active()
    timers.pause([pizza.id], now=1240.0)
    journal = TimerJournal(tmp_path / "db.sqlite3")
    journal.release_all()
    [back] = journal.adopt("ann", "second", monotonic=50.0, wall=NOW + timedelta(hours=2))
    assert back.paused and back.paused_left == pytest.approx(360.0)


def test_added_time_is_written_down(tmp_path: Path) -> None:
    timers = set_pizza(TimerJournal(tmp_path / "db.sqlite3"))
    timers.adjust([timers.active()[0].id], 300, now=1000.0)
    assert restart(tmp_path / "db.sqlite3", after_s=100) == [800]


def test_a_timer_due_while_nothing_ran_rings_at_once(tmp_path: Path) -> None:
    set_pizza(TimerJournal(tmp_path / "db.sqlite3"), seconds=60)
    journal = TimerJournal(tmp_path / "db.sqlite3")
    journal.release_all()
    timers = Timers(journal=journal.bound("ann", "second"))
    timers.restore(journal.adopt("ann", "second", monotonic=50.0, wall=NOW + timedelta(hours=1)))
    assert [t.name for t in timers.pop_due(50.0)] == ["pizza"]
    assert journal.adopt("ann", "third", monotonic=0.0, wall=NOW) == []  # rung: gone


def test_cancelled_and_rung_timers_are_forgotten(tmp_path: Path) -> None:
    journal = TimerJournal(tmp_path / "db.sqlite3")
    timers = set_pizza(journal)
    timers.discard([timers.active()[0].id])
    assert restart(tmp_path / "db.sqlite3", after_s=1) == []


def test_one_owners_timers_ring_in_one_conversation_at_a_time(tmp_path: Path) -> None:
    journal = TimerJournal(tmp_path / "db.sqlite3")
    set_pizza(journal, holder="first")
    assert journal.adopt("ann", "second", monotonic=0.0, wall=NOW) == []
    assert journal.adopt("bob", "third", monotonic=0.0, wall=NOW) == []
    journal.release("first")  # the page closed: the next conversation takes them over
    assert [t.name for t in journal.adopt("ann", "second", monotonic=0.0, wall=NOW)] == ["pizza"]


async def test_the_engine_gives_a_new_conversation_the_timers_a_closed_one_set(
    tmp_path: Path,
) -> None:
    fake = fake_engine(skills=True)
    fake.engine.timer_keeper = TimerJournal(tmp_path / "db.sqlite3")
    try:
        async with fake.engine.open(Speaker()) as first:
            assert first.bell is not None
            first.bell.timers.add("timer", 10_000.0, "pizza timer", "pizza",
                                  datetime.now().astimezone() + timedelta(minutes=10), duration_s=600)
        async with fake.engine.open(Speaker()) as second:
            assert second.bell is not None
            assert [t.name for t in second.bell.timers.active()] == ["pizza"]
            async with fake.engine.open(Speaker()) as third:  # the second holds them
                assert third.bell is not None and third.bell.timers.active() == []
        async with fake.engine.open(Speaker(), keep_timers=False) as text_only:
            assert text_only.bell is not None and text_only.bell.timers.active() == []
    finally:
        fake.close()
