"""The skills router: order, normalisation, failures skipped, actions once, speed."""

from __future__ import annotations

import logging
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from models.list_store import SqliteListStore
from pipeline.skills import (
    SkillContext,
    SkillReply,
    Skills,
    Timers,
    default_skills,
)

CTX = SkillContext(now=datetime(2024, 5, 1, 8, 0, tzinfo=ZoneInfo("Europe/London")), monotonic=0.0)


class Echo:
    """Answers every text with itself: records what the router passed."""

    def __init__(self, name: str, *, answers: bool = True) -> None:
        self.name = name
        self.seen: list[str] = []
        self.answers = answers

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        self.seen.append(text)
        return SkillReply(text=text, skill=self.name) if self.answers else None


class Broken:
    name = "broken"

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        raise ValueError("bad pattern")


class Counting:
    name = "counting"

    def __init__(self, *, fails: bool = False) -> None:
        self.runs = 0
        self.fails = fails

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        return SkillReply(text="ok", skill=self.name, action=self._act)

    def _act(self) -> None:
        self.runs += 1
        if self.fails:
            raise RuntimeError("disk full")


def test_the_first_skill_that_answers_wins_and_later_ones_are_not_asked() -> None:
    declines, first, second = Echo("no", answers=False), Echo("first"), Echo("second")
    reply = Skills([declines, first, second]).answer("Hello there.", CTX)
    assert reply is not None and reply.skill == "first"
    assert second.seen == []


def test_skills_receive_the_normalised_transcript() -> None:
    echo = Echo("echo")
    Skills([echo]).answer("  Set a Timer for 10 Minutes?! ", CTX)
    assert echo.seen == ["set a timer for 10 minutes"]


def test_an_empty_transcript_asks_no_skill() -> None:
    echo = Echo("echo")
    assert Skills([echo]).answer(" ... ", CTX) is None and echo.seen == []


def test_a_skill_that_raises_is_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        reply = Skills([Broken(), Echo("after")]).answer("hello", CTX)
    assert reply is not None and reply.skill == "after"
    assert "broken" in caplog.text


def test_none_when_no_skill_answers() -> None:
    assert Skills([Echo("no", answers=False)]).answer("hello", CTX) is None


def test_an_action_runs_at_most_once() -> None:
    skill = Counting()
    reply = Skills([skill]).answer("go", CTX)
    assert reply is not None and reply.action is not None
    reply.action()
    reply.action()
    assert skill.runs == 1


def test_a_failing_action_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    skill = Counting(fails=True)
    reply = Skills([skill]).answer("go", CTX)
    assert reply is not None and reply.action is not None
    with caplog.at_level(logging.ERROR):
        reply.action()
    assert skill.runs == 1 and "counting" in caplog.text


def test_default_order_is_timers_then_lists_then_extra(tmp_path: Path) -> None:
    extra = Echo("extra")
    skills = default_skills(timers=Timers(), store=SqliteListStore(tmp_path / "db.sqlite3"), extra=[extra])
    assert skills.names == ("timer", "list", "extra")
    timer = skills.answer("Set a timer for ten minutes.", CTX)
    listed = skills.answer("What's on my shopping list?", CTX)
    other = skills.answer("What is the capital of France?", CTX)
    assert timer is not None and timer.skill == "timer"
    assert listed is not None and listed.skill == "list"
    assert other is not None and other.skill == "extra"


def test_without_a_store_there_is_no_list_skill() -> None:
    skills = default_skills(timers=Timers(), store=None)
    assert skills.names == ("timer",)
    assert skills.answer("What's on my shopping list?", CTX) is None


def test_answering_is_fast(tmp_path: Path) -> None:
    """Well under a millisecond a turn, matching or not (the bound is loose for shared CI)."""
    skills = default_skills(timers=Timers(), store=SqliteListStore(tmp_path / "db.sqlite3"))
    said = [
        "What's the capital of France?",
        "Set a timer for ten minutes.",
        "How much time is left on the pasta timer?",
        "Add eggs and butter to my shopping list.",
        "Who invented the alarm clock?",
    ]
    for text in said:
        skills.answer(text, CTX)
    start = time.perf_counter()
    for _ in range(40):
        for text in said:
            skills.answer(text, CTX)
    per_call = (time.perf_counter() - start) / (40 * len(said))
    assert per_call < 1e-3
