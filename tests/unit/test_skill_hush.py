"""The hush skill: "stop", "wait", "never mind" are answered with silence; a request that
says more ("stop the timer", "wait, what about Spain?") is not."""

from __future__ import annotations

from datetime import datetime

import pytest

from pipeline.skills import SkillContext, normalise
from pipeline.skills.hush import HushSkill, is_hush
from pipeline.timeline import now


@pytest.mark.parametrize("said", [
    "Stop.", "Stop!", "Stop, stop, wait.", "Okay, stop.", "No, no, stop.", "Wait.", "Wait a second.",
    "Hold on.", "Hang on a minute.", "Be quiet.", "Quiet please.", "Shh.", "Shut up.", "Enough!",
    "That's enough.", "Never mind.", "Nevermind.", "Forget it.", "Cancel that.", "Stop talking.",
    "Hey, stop it please.", "Apace, stop.",
])
def test_what_asks_for_silence(said: str) -> None:
    assert is_hush(normalise(said)), said


@pytest.mark.parametrize("said", [
    "Stop the timer.", "Wait, what about Spain?", "Stopwatch.", "Pause the music.", "No.",
    "Okay.", "Stop motion animation.", "Never mind the weather, what time is it?",
    "How do I stop a nosebleed?", "Enough about that, tell me a joke.", "",
])
def test_what_asks_for_more(said: str) -> None:
    assert not is_hush(normalise(said)), said


def test_the_answer_is_silence() -> None:
    ctx = SkillContext(now=datetime.now().astimezone(), monotonic=now())
    reply = HushSkill().answer(normalise("Stop."), ctx)
    assert reply is not None and reply.text == "" and reply.skill == "hush"
    assert HushSkill().answer(normalise("What time is it?"), ctx) is None
