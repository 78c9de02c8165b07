"""Deterministic skills: timers, lists, and the router that picks one for a transcript.

May import only pipeline.skills: the skills know nothing of the conversation (their
stores come in through Protocols such as `ListStore`).
"""

from pipeline.skills.base import LastResult, Skill, SkillContext, SkillReply, normalise
from pipeline.skills.lists import ListSkill, ListStore
from pipeline.skills.router import Skills, default_skills
from pipeline.skills.timer_store import Timer, Timers
from pipeline.skills.timers import TimerSkill, ring_text

__all__ = [
    "LastResult",
    "ListSkill",
    "ListStore",
    "Skill",
    "SkillContext",
    "SkillReply",
    "Skills",
    "Timer",
    "TimerSkill",
    "Timers",
    "default_skills",
    "normalise",
    "ring_text",
]
