"""The skill that asks hassil first: Home Assistant's intents (and apace's own sentences)
decide what a request is; the skill that can do it answers.

Timer intents are carried out on the conversation's timers (`TimerIntents`). The others
(time, date, shopping list, never mind, weather) are handed to the skill that already
answers them, as the plain request the intent stands for ("what time is it"), the way a
tool call is (pipeline/answer/tools.py): one reply and one side effect per request, whichever
words asked for it. Nothing recognised, or a slot that makes no sense: None, and the
phrase-matching skills get the words.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from pipeline.skills.base import SkillContext, SkillReply
from pipeline.skills.intents import Recognised, Recognizer
from pipeline.skills.soundalike import sounds_like
from pipeline.skills.timer_intents import TimerIntents

PLAIN: Mapping[str, Callable[[Recognised], str | None]] = {
    "HassGetCurrentTime": lambda f: "what time is it",
    "HassGetCurrentDate": lambda f: "what's the date today",
    "HassNevermind": lambda f: "never mind",
    "HassGetWeather": lambda f: (f"what's the weather in {f.text('name')}" if f.text("name")
                                 else "what's the weather"),
    "HassShoppingListAddItem": lambda f: (f"add {f.text('item')} to my shopping list"
                                          if f.text("item") else None),
    "HassShoppingListCompleteItem": lambda f: (f"remove {f.text('item')} from my shopping list"
                                               if f.text("item") else None),
}
"""The request each non-timer intent stands for, as the skill that answers it reads it."""

_KEEPS_WORDS = frozenset({"HassShoppingListAddItem"})
"""Intents whose skill still reads the words as said: Whisper's commas separate the items
of "add apples, pears and milk to my list" (the list skill reads `ctx.transcript`)."""


TIMER_VERBS = ("pause", "resume", "continue", "unpause", "cancel", "stop", "add", "remove",
               "subtract", "increase", "decrease", "set", "start", "create")
"""The verbs a timer request starts with (Home Assistant's timer sentences and apace's)."""
_VERB_CUTOFF = 0.7
"""How close the first word's sound must be to one verb (and closer than to any other):
"post" is 0.75 of "pause", "council" 1.0 of "cancel", "assume" 0.91 of "resume"."""


def timer_verb_respelled(text: str) -> str | None:
    """`text` with its first word taken for the timer verb it sounds like ("post my timer" →
    "pause my timer", "council the timer" → "cancel the timer"), when the words are about a
    timer and start with no verb; None otherwise. Tiny.en mishears a short verb said first
    more than any other word of a timer request (the dev split's espeak-ng voices)."""
    words = text.split()
    if len(words) < 2 or not {"timer", "timers"} & set(words) or words[0] in TIMER_VERBS:
        return None
    verb = sounds_like(words[0], TIMER_VERBS, cutoff=_VERB_CUTOFF)
    return None if verb is None else " ".join([verb, *words[1:]])


class IntentSkill:
    """Recognises with hassil; timer intents go to `timers`, the rest to `others`."""

    name = "intent"

    def __init__(self, recognizer: Recognizer, timers: TimerIntents,
                 others: Callable[[str, SkillContext], SkillReply | None]) -> None:
        self._recognizer = recognizer
        self._timers = timers
        self._others = others

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        for found in self._recognizer.recognise(text):
            if (reply := self._answer(found, ctx)) is not None:
                return reply
        return None

    def answer_misheard(self, text: str, ctx: SkillContext) -> SkillReply | None:
        """A timer request whose first word was misheard (`timer_verb_respelled`), tried only
        when no skill took the words as heard: the sentence must still be a timer intent."""
        respelled = timer_verb_respelled(text)
        if respelled is None:
            return None
        for found in self._recognizer.recognise(respelled):
            if found.intent not in PLAIN and (reply := self._timers.answer(found, ctx)) is not None:
                return reply
        return None

    def _answer(self, found: Recognised, ctx: SkillContext) -> SkillReply | None:
        if (plain := PLAIN.get(found.intent)) is not None:
            request = plain(found)
            if request is None:
                return None
            if found.intent not in _KEEPS_WORDS:
                ctx = replace(ctx, transcript=request)
            return self._others(request, ctx)
        return self._timers.answer(found, ctx)
