"""SocialSkill: small talk gets one friendly sentence; anything more is not small talk."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipeline.skills.base import SkillContext, normalise
from pipeline.skills.social import SocialSkill

CTX = SkillContext(now=datetime(2026, 12, 1, 9, tzinfo=UTC), monotonic=0.0)


def ask(text: str, previous: str = "") -> str | None:
    reply = SocialSkill().answer(normalise(text),
                                 SkillContext(now=CTX.now, monotonic=0.0, previous=previous))
    return None if reply is None else reply.text


@pytest.mark.parametrize(("said", "start"), [
    ("Hello there!", "Hello"), ("Hey.", "Hello"), ("Good morning!", "Good morning"),
    ("How are you today?", "I'm doing well"), ("Thank you very much.", "You're welcome"),
    ("Goodbye!", "Goodbye"), ("Good night.", "Good night"), ("Who are you?", "I'm apace"),
    ("What can you do?", "I can set timers"),
])
def test_small_talk_gets_a_friendly_sentence(said: str, start: str) -> None:
    reply = ask(said)
    assert reply is not None and reply.startswith(start)


def test_the_same_thanks_twice_gets_a_new_wording() -> None:
    first = ask("Thanks!")
    assert first is not None
    second = ask("Thanks!", previous=first)
    assert second is not None and second != first


@pytest.mark.parametrize("said", ["Hello, what time is it?", "How are you able to hear me?",
                                  "Thanks for the timer, now add milk to my list.",
                                  "Say goodbye to my mother.", "Who are you voting for?"])
def test_more_than_small_talk_is_declined(said: str) -> None:
    assert ask(said) is None
