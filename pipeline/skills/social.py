"""Greetings, thanks, goodbyes, "how are you", "who are you", "what can you do".

Small talk is where a small LLM rambles or answers in the wrong register ("I'm sorry for
any misunderstanding…" to "Goodbye"). A whole-request match only: "hello, what's the
time" is not small talk and goes on to the other skills. Each kind has a few wordings,
and the one said last time is not said again (a second "thanks" gets a new one).
"""

from __future__ import annotations

import re

from pipeline.skills.base import SkillContext, SkillReply
from pipeline.skills.phrasing import core

_NAME = r"(?: there| apace| everyone| again| friend)?"
_KINDS: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    (re.compile(rf"(?:hello|hi|hey|hiya|howdy|greetings){_NAME}"),
     ("Hello! What can I do for you?", "Hi there! How can I help?")),
    (re.compile(rf"good (?P<part>morning|afternoon|evening){_NAME}"),
     ("Good {part}! What can I do for you?", "Good {part} to you too! How can I help?")),
    (re.compile(r"(?:and )?how are you(?: doing)?(?: today| this morning| tonight)?"
                r"|how's it going|how are things|how do you do"),
     ("I'm doing well, thanks for asking. How can I help?",
      "All good here, thank you. What can I do for you?")),
    (re.compile(r"(?:thank you|thanks|thank you so much|thanks a lot|thank you very much"
                r"|many thanks|cheers)(?: apace)?(?: that's all| that was helpful)?"),
     ("You're welcome!", "Happy to help!", "Any time!")),
    (re.compile(r"(?:goodbye|bye|bye bye|see you|see you later|talk to you later"
                r"|that's all|that's all for now)(?: apace)?"),
     ("Goodbye! Talk to you soon.", "Bye for now!")),
    (re.compile(r"good ?night(?: apace)?"), ("Good night! Sleep well.", "Good night!")),
    (re.compile(r"who are you|what(?:'s| is) your name|what are you"),
     ("I'm apace, a voice assistant that runs right here on this box, with no cloud.",)),
    (re.compile(r"what can you do|what do you do|how can you help(?: me)?|help"),
     ("I can set timers and reminders, keep a shopping list, do sums and unit conversions, "
      "tell the time and date, spell words, and answer simple questions.",)),
]


class SocialSkill:
    """Small talk, answered in one friendly sentence."""

    name = "social"

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        request = core(text)
        for pattern, wordings in _KINDS:
            if m := pattern.fullmatch(request):
                fresh = [w for w in wordings if w.format(**m.groupdict()) != ctx.previous]
                choice = (fresh or list(wordings))[0].format(**m.groupdict())
                return SkillReply(text=choice, skill=self.name)
        return None
