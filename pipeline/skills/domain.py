"""Whether words name what only a skill deals in: a timer, an alarm, a list, the date.

A transcript that does, but that no skill took, was most likely misheard: "Tim is left on
my timer", "Renew 25 minute timer", "How on is left on the timer?" are timer requests
whose verb tiny.en got wrong in a voice it hears badly. Such a turn is worth hearing again
with the sturdier ear before the LLM answers it (pipeline.answer.second_hearing). A
question that names none of these ("how many legs does a spider have") is never heard
twice, so it never waits for the second ear.
"""

from __future__ import annotations

import re

_DOMAIN = re.compile(
    r"\b(timers?|alarms?|lists?|shopping|dates?|today|tomorrow|weather|remind(ers?)?"
    r"|minutes?|hours?|seconds?)\b", re.IGNORECASE)
"""The objects of the skills' intents (Home Assistant's timer, date, shopping-list and
weather intents; apace's alarms, reminders and other lists) and the units of a timer's
length, as Whisper writes them."""


def names_a_skill(text: str) -> bool:
    """Whether `text` names something a skill deals in (see the module docstring)."""
    return _DOMAIN.search(text) is not None
