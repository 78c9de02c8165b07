"""Deterministic skills: timers, lists, and the router that picks one for a transcript."""

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
