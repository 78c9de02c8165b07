"""Hearing a turn again with the sturdier ear when no skill took what the first ear heard.

tiny.en, the default ear, mishears the short verb a request starts with in voices unlike
the ones it learned from ("Renew 25 minute timer", "How on is left on the timer?"), and the
request then goes to the LLM, which answers it wrong and slowly. whisper-base (the
noisy-room ear, loaded beside it where pulled) hears many of those right. Hearing every
turn twice would cost every LLM answer ~200 ms on 2 cores, so only a turn that names what
a skill deals in (pipeline.skills.domain) and that no skill took, or whose request named a
timer that is not there while others run ("Cancel might be the timer" for "cancel my pizza
timer"), is heard again. The second words are kept only if a skill takes them and finds
what they name: otherwise the first ear's words stand. On a dev draw of Home Assistant's
sentences in espeak-ng and Piper voices (75 turns), 10 turns that no skill took were heard
again and 4 of them reached their skill; on a second draw never looked at before (50
turns), 8 and 5; none reached a wrong skill (docs/quality.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from pipeline.answer.model_calls import Models
from pipeline.compute.workers import Priority
from pipeline.events import Pcm
from pipeline.skills.base import SkillReply, normalise
from pipeline.skills.domain import names_a_skill

log = logging.getLogger(__name__)


async def _other_words(models: Models, audio: Pcm, heard: str, priority: Priority) -> str | None:
    """The second ear's words for `audio` when it has one and they are not `heard`'s."""
    ear = models.second_ear
    if ear is None:
        return None
    try:
        again = await ear.transcribe(audio, priority=priority)
    except asyncio.CancelledError:
        raise
    except Exception:  # the first ear's words stand
        log.exception("hearing the turn again failed")
        return None
    return again if again and normalise(again) != normalise(heard) else None


async def hear_again(models: Models, audio: Pcm, heard: str,
                     answer_skill: Callable[[str], SkillReply | None],
                     priority: Priority) -> tuple[str, SkillReply] | None:
    """(the second ear's words, the skill reply to them) when `heard` names a skill's
    thing, the second ear hears something else, and a skill takes that and finds what it
    names; else None."""
    if not names_a_skill(heard):
        return None
    again = await _other_words(models, audio, heard, priority)
    if again is None:
        return None
    skill = answer_skill(again)
    if skill is None or skill.found_nothing:
        return None
    log.info("heard again: %r -> %r (%s)", heard, again, skill.skill)
    return again, skill


async def hear_unsure(models: Models, audio: Pcm, heard: str, priority: Priority) -> str | None:
    """The second ear's words for a turn the turn detector was unsure of, when they are
    not the first ear's; else None.

    Such a turn waits the statement or trailing wait (1.0-1.2 s) before it ends, and the
    first ear's words are often why the detector was unsure: tiny.en heard "What is the
    focus in?" for "What is photosynthesis?" and "Which planet in closest to my son?" for
    "Which planet is closest to the sun?" in espeak-ng voices. The second hearing (~0.2-0.4 s
    on 2 cores) is made inside that wait, before the LLM reads the words."""
    again = await _other_words(models, audio, heard, priority)
    if again is not None:
        log.info("unsure turn heard again: %r -> %r", heard, again)
    return again
