"""The skills router: the first skill that recognises a transcript answers it.

Order matters — stateful skills (timers, lists) first, then the stateless ones the caller
adds — and is fixed by `default_skills`. A skill that raises is logged and skipped: a bug in
one pattern must never fail a turn, the LLM answers instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from pipeline.skills.assist import IntentSkill
from pipeline.skills.base import LastResult, Skill, SkillContext, SkillReply, normalise
from pipeline.skills.intents import Recognizer
from pipeline.skills.lists import ListSkill, ListStore
from pipeline.skills.timer_intents import TimerIntents
from pipeline.skills.timer_store import Timers
from pipeline.skills.timers import TimerSkill

log = logging.getLogger(__name__)
Answer = Callable[[str, SkillContext], SkillReply | None]


class Skills:
    """Asks each skill in order; the first reply wins. Matching is hassil and plain regex
    work (hassil ~0.5 ms median, ~1 ms p95: docs/intents.md; a conversion heard with a
    unit wrong, ~1 ms: soundalike), so it may run on the event loop."""

    def __init__(self, skills: Sequence[Skill], *,
                 last_resort: Answer | None = None
                 ) -> None:
        self._skills = tuple(skills)
        self._last_resort = last_resort
        """Asked when no skill took the words as heard (a timer verb misheard)."""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(skill.name for skill in self._skills)

    def answer(self, transcript: str, ctx: SkillContext) -> SkillReply | None:
        """The reply of the first skill that recognises `transcript`, or None (ask the LLM).

        The reply's action is wrapped to run at most once and to log, not raise, a failure:
        it runs at commit, when the words have been spoken and nothing can be taken back.
        """
        text = normalise(transcript)
        if not text:
            return None
        asked: list[tuple[str, Answer]] = [(skill.name, skill.answer) for skill in self._skills]
        if self._last_resort is not None:
            asked.append(("intent", self._last_resort))
        for name, answer in asked:
            try:
                reply = answer(text, ctx)
            except Exception:
                log.exception("skill %s failed on %r; skipped", name, text)
                continue
            if reply is not None:
                if reply.refusal and reply.result is None:  # "and tomorrow?" is refused too
                    reply = replace(reply, result=LastResult(
                        skill=reply.skill, kind="refusal", topic=reply.text))
                if reply.action is None:
                    return reply
                return replace(reply, action=_once(reply.action, name))
        return None


def _once(action: Callable[[], None], skill: str) -> Callable[[], None]:
    done = False

    def run() -> None:
        nonlocal done
        if done:
            return
        done = True
        try:
            action()
        except Exception:
            log.exception("skill %s action failed", skill)

    return run


def default_skills(
    *, timers: Timers, store: ListStore | None, extra: Sequence[Skill] = (),
    recognizer: Recognizer | None = None,
) -> Skills:
    """The standard order: Home Assistant's intents (when a `recognizer` is given:
    `models.intents.load_recognizer()`), then timers, lists (when a store is open) and
    `extra` by their own phrase matching."""
    timer_skill = TimerSkill(timers)
    skills: list[Skill] = [timer_skill]
    if store is not None:
        skills.append(ListSkill(store))
    skills.extend(extra)
    if recognizer is not None:
        # An intent that is not a timer's is answered by the skill that already answers
        # its plain request ("what time is it"): the phrase-matching skills, in order.
        intents = IntentSkill(recognizer, TimerIntents(timer_skill), Skills(skills).answer)
        return Skills([intents, *skills], last_resort=intents.answer_misheard)
    return Skills(skills)
