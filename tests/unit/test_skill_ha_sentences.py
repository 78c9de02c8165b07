"""Home Assistant's own English test sentences (home-assistant/intents, tests/en/*Timer*,
*ShoppingList*) typed as they are: each is really carried out on the timer store or the
list, not only recognised."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from models.intents import load_recognizer
from models.list_store import SqliteListStore
from pipeline.skills import SkillContext, Skills, Timers, default_skills
from pipeline.skills.timers import timer_label

NOW = datetime(2024, 5, 1, 8, 0, tzinfo=ZoneInfo("Europe/London"))
CTX = SkillContext(now=NOW, monotonic=1000.0)


def ask(router: Skills, sentence: str) -> str:
    reply = router.answer(sentence, replace(CTX, transcript=sentence))
    assert reply is not None, sentence
    if reply.action is not None:
        reply.action()
    return reply.text


def three_timers() -> tuple[Timers, Skills]:
    """A pizza timer (25 minutes), a 1 hour timer and a 5 minute timer, as HA's tests have."""
    timers = Timers()
    for name, seconds in (("pizza", 1500), (None, 3600), (None, 300)):
        timers.add("timer", 1000.0 + seconds, timer_label(name, seconds), name,
                   NOW + timedelta(seconds=seconds), duration_s=seconds)
    return timers, default_skills(timers=timers, store=None, recognizer=load_recognizer())


def one_timer() -> tuple[Timers, Skills]:
    timers = Timers()
    timers.add("timer", 1600.0, "10 minute timer", None, NOW, duration_s=600)
    return timers, default_skills(timers=timers, store=None, recognizer=load_recognizer())


def due(timers: Timers) -> dict[float, float]:
    """Each timer's time left, by the length it was set for."""
    return {t.duration_s: Timers.remaining(t, 1000.0) for t in timers.active()}


@pytest.mark.parametrize(("sentence", "seconds", "name"), [
    ("start a 1 hour timer", 3600, None), ("start a 1 hour and 15 minute timer", 4500, None),
    ("start a 1 hour and 30 second timer", 3630, None),
    ("start a 1 hour 15 minute and 30 second timer", 4530, None),
    ("start a 5 minute timer", 300, None), ("start a 5 minute timer named pizza", 300, "pizza"),
    ("start a 5 minute and 10 second timer", 310, None), ("start a 45 second timer", 45, None),
])
def test_start_timer(sentence: str, seconds: float, name: str | None) -> None:
    timers = Timers()
    ask(default_skills(timers=timers, store=None, recognizer=load_recognizer()), sentence)
    [timer] = timers.active()
    assert (timer.duration_s, timer.name) == (seconds, name)


@pytest.mark.parametrize(("sentence", "change"), [
    ("add 5 minutes to timer", 300), ("increase my timer by 5 minutes", 300),
    ("remove 5 minutes from timer", -300),
])
def test_change_the_only_timer(sentence: str, change: float) -> None:
    timers, router = one_timer()
    ask(router, sentence)
    assert due(timers) == {600: 600 + change}


@pytest.mark.parametrize(("sentence", "length", "change"), [
    ("add 5 minutes to 1 hour timer", 3600, 300), ("add 5 minutes to timer for 1 hour", 3600, 300),
    ("increase 1 hour timer by 5 minutes", 3600, 300),
    ("increase timer for 1 hour by 5 minutes", 3600, 300),
    ("add 5 minutes to pizza timer", 1500, 300), ("add 5 minutes to timer named pizza", 1500, 300),
    ("increase pizza timer by 5 minutes", 1500, 300),
    ("increase timer for pizza by 5 minutes", 1500, 300),
    ("remove 5 minutes from 1 hour timer", 3600, -300),
    ("remove 5 minutes from pizza timer", 1500, -300),
])
def test_change_one_of_three(sentence: str, length: float, change: float) -> None:
    timers, router = three_timers()
    before = due(timers)
    ask(router, sentence)
    after = due(timers)
    assert after[length] == before[length] + change
    assert {k: v for k, v in after.items() if k != length} == \
        {k: v for k, v in before.items() if k != length}


NEXT_OF_THREE = "You have 3 timers running. Next: about 5 minutes left on the 5 minute timer."


@pytest.mark.parametrize(("sentence", "said"), [
    # Three running: how many, and the next to ring (a sentence a timer is too long to hear).
    ("timer status", NEXT_OF_THREE), ("status of my timers", NEXT_OF_THREE),
    ("how much time is left on my timers", NEXT_OF_THREE),
    ("how long is left on my timers", NEXT_OF_THREE),
    ("status of 1 hour timer", "1 hour left on the 1 hour timer"),
    ("1 hour timer status", "1 hour left on the 1 hour timer"),
    ("time left on the 1 hour timer", "1 hour left on the 1 hour timer"),
    ("how long is left on my 1 hour timer", "1 hour left on the 1 hour timer"),
    ("pizza timer status", "25 minutes left on the pizza timer"),
    ("status of pizza timer", "25 minutes left on the pizza timer"),
    ("how much time left on pizza timer", "25 minutes left on the pizza timer"),
    ("how long is left on the pizza timer", "25 minutes left on the pizza timer"),
])
def test_timer_status_starts_nothing(sentence: str, said: str) -> None:
    timers, router = three_timers()
    assert said in ask(router, sentence)
    assert len(timers.active()) == 3


@pytest.mark.parametrize(("sentence", "length"), [
    ("pause 1 hour timer", 3600), ("pause pizza timer", 1500),
])
def test_pause_one_of_three(sentence: str, length: float) -> None:
    timers, router = three_timers()
    ask(router, sentence)
    assert [t.duration_s for t in timers.active() if t.paused] == [length]


def test_pause_and_resume_the_only_timer() -> None:
    timers, router = one_timer()
    ask(router, "pause timer")
    assert [t.paused for t in timers.active()] == [True]
    ask(router, "resume timer")
    assert [t.paused for t in timers.active()] == [False]


@pytest.mark.parametrize(("sentence", "length"), [
    ("cancel 5 minute timer", 300), ("cancel pizza timer", 1500),
])
def test_cancel_one_of_three(sentence: str, length: float) -> None:
    timers, router = three_timers()
    ask(router, sentence)
    assert length not in due(timers) and len(timers.active()) == 2


def test_cancel_the_only_timer_and_cancel_all() -> None:
    timers, router = one_timer()
    ask(router, "cancel timer")
    assert timers.active() == []
    timers, router = three_timers()
    ask(router, "cancel all timers")
    assert timers.active() == []


@pytest.mark.parametrize("sentence", [
    "check off apples from my shopping list", "complete apples on my shopping list",
    "delete apples in my shopping list", "remove apples on my shopping list",
    "check apples off from my shopping list", "check apples off my list",
])
def test_shopping_list_complete_item(sentence: str, tmp_path: Path) -> None:
    store = SqliteListStore(tmp_path / "lists.sqlite3")
    router = default_skills(timers=Timers(), store=store, recognizer=load_recognizer())
    ask(router, "add apples and milk to my shopping list")
    ask(router, sentence)
    assert store.items("default", "shopping") == ["milk"]
