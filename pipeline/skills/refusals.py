"""Follow-ups on an honest refusal: "what's the weather like?" → "I can't check the
weather: …" → "and tomorrow?" is refused too, in its own words.

Left to the LLM, such a follow-up had no question in it the LLM could answer: a small model
invents a forecast, copies the refusal, or writes a tool call ("Sorry, I didn't catch
that."). The router leaves every refusal as the turn's result (kind "refusal", its text
as the topic); this skill answers only a bare time or place said after one ("and
tomorrow?", "what about in Paris?"), and only then; or said over one, which the user cut
in on to finish their question ("… weather like? | in Paris today").
"""

from __future__ import annotations

import re

from pipeline.skills.base import SkillContext, SkillReply
from pipeline.skills.phrasing import core

_DAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_TIME = (rf"today|tonight|tomorrow(?: morning| afternoon| evening| night)?|yesterday|{_DAY}"
         rf"|(?:this|next) (?:morning|afternoon|evening|week|weekend|month|{_DAY})"
         r"|(?:the|this) weekend|later|now|right now")
_FOLLOW_UP = re.compile(
    rf"(?:(?:what|how) about |and )?(?:(?P<time>{_TIME})"
    r"|(?P<place>(?:in|at|near|for) (?!me\b|you\b|that\b|it\b)[a-z][a-z' ]{1,30}))")
"""After `core`, which has taken a leading "and": "tomorrow", "what about in Paris"."""
_ASKED_ON = re.compile(r"^\s*(?:and|what about|how about)\b", re.IGNORECASE)
"""The words as said must carry on ("and …", "what about …"): a bare "tomorrow" is not
(a bare place is: "in Paris today", the rest of a question the refusal cut at its pause)."""


class RefusalFollowUp:
    """ "And tomorrow?" after "I can't check the weather": the same limit, said again."""

    name = "offline"

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        last = ctx.last
        if last is None or last.kind != "refusal" or ":" not in last.topic:
            return None
        # A refusal the user cut in on went on being asked: the turn ended at a thinking
        # pause ("What is the weather light?" for "… like | in Paris today?").
        heard = ctx.previous.rstrip()
        went_on = bool(heard) and not heard.endswith((".", "!", "?"))
        m = _FOLLOW_UP.fullmatch(core(text))
        if m is None:
            return None
        # A bare place goes on from the refusal ("in Paris today", said over it or just
        # after); a bare time may answer something else: "and …" must carry it on.
        if not (went_on or m["place"]) and not _ASKED_ON.match(ctx.transcript or text):
            return None
        cannot, why = (part.strip() for part in last.topic.split(":", 1))
        when = f"for {m['time']}" if m["time"] else _as_said(m["place"], ctx.transcript)
        either = "" if went_on else " either"
        # The refusal it follows stays the result: "and the weekend?" next is refused as it.
        return SkillReply(text=f"{cannot.rstrip('.')} {when}{either}: {why}", skill=self.name,
                          refusal=True, result=last)


def _as_said(words: str, transcript: str) -> str:
    """`words` (normalised: lower case) as the transcript wrote them ("in Paris")."""
    m = re.search(re.escape(words), transcript, re.IGNORECASE)
    return m[0] if m else words
