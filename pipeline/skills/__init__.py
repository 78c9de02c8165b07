"""Deterministic skills: timers, lists, and the router that picks one for a transcript."""

from pipeline.skills.base import LastResult, Skill, SkillContext, SkillReply, normalise
from pipeline.skills.lists import (
    ListSkill,
    ListStore,
    ListStoreError,
    default_data_dir,
    default_db_path,
)
from pipeline.skills.router import Skills, default_skills
from pipeline.skills.timer_store import Timer, Timers
from pipeline.skills.timers import TimerSkill, ring_text

__all__ = [
    "LastResult",
    "ListSkill",
    "ListStore",
    "ListStoreError",
    "Skill",
    "SkillContext",
    "SkillReply",
    "Skills",
    "Timer",
    "TimerSkill",
    "Timers",
    "default_data_dir",
    "default_db_path",
    "default_skills",
    "normalise",
    "ring_text",
]
