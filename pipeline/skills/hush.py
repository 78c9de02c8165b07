""""Stop.", "Wait.", "Never mind.": the user wants the assistant to be quiet, not an answer.

Said over a reply, the reply stops (pipeline.turn.talk_over) and these words are the user's
turn; said any time, they were answered by the LLM ("I'm sorry, I can't stop…"), which
talked on exactly when told not to. Alexa and Google Assistant say nothing to "stop"; so
does apace: the reply is empty, and the exchange is left out of what the LLM reads
(pipeline.conversation). A whole-request match only: "stop the timer" is the timer
skill's, "wait, what about Spain?" is a question.
"""

from __future__ import annotations

import re

from pipeline.skills.base import SkillContext, SkillReply
from pipeline.skills.phrasing import core

_WORD = (
    r"(?:stop(?: it| that| talking| there)?"
    r"|(?:wait|hold on|hang on)(?: a (?:sec|second|minute|moment))?"
    r"|(?:be )?quiet|shush|sh+|hush|shut up|enough|that's enough|that is enough|never ?mind"
    r"|forget it|cancel(?: that)?|pause)"
)
_HUSH = re.compile(rf"(?:(?:no|oh|apace|okay|ok|wait|please) )*{_WORD}(?: {_WORD}| please| apace)*")


def is_hush(words: str) -> bool:
    """`words` (normalised) only ask the assistant to stop or wait."""
    return bool(_HUSH.fullmatch(core(words)))


class HushSkill:
    """"Stop", "wait", "never mind": answered with silence."""

    name = "hush"

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        return SkillReply(text="", skill=self.name) if is_hush(text) else None
