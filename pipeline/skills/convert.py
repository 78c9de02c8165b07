"""Unit conversions said aloud: "how many grams in three ounces" → "3 ounces is about 85 grams."

Cooking, weight, distance, temperature, volume, speed and time, the conversions people ask
a kitchen or car assistant for, and comparisons of two amounts (pipeline.skills.compare).
pint does the arithmetic (offset temperatures included); how the units are said is
pipeline.skills.units's table. The whole request must be a conversion, so anything else is
left to the LLM.
"""

from __future__ import annotations

import functools
import re

from pipeline.skills.base import LastResult, SkillContext, SkillReply
from pipeline.skills.compare import compare
from pipeline.skills.phrasing import core, digits
from pipeline.skills.soundalike import sound_key, sounds_like
from pipeline.skills.speech import say_number
from pipeline.skills.units import (
    BY_PINT,
    MEASURE_WORDS,
    QTY,
    TEMPERATURE,
    UNITS,
    Unit,
    lookup,
    other_scale,
    quantity,
    registry,
    said_amount,
    say_value,
    unit_group,
    unit_pair,
)

_ASK = re.compile(r"^(?:(?:what(?:'s| is|s)?|how much is|convert|change|turn)\s+)+")
_FORWARD = re.compile(
    rf"^{QTY} {unit_group('src')} "
    # "and": Whisper often writes a quick "in" as "and" ("100 Fahrenheit and Celsius").
    rf"(?:to|in|into|in to|as|and|is how many|are how many|equals how many|is what in) "
    rf"{unit_group('dst')}$"
)
_BACKWARD = re.compile(
    rf"^how (?:many|much) {unit_group('dst')} "
    r"(?:(?:are there|are|is|make|makes|would be|equals?|go) )?(?:(?:in|to|into|is|are|of) )?"
    rf"(?:{QTY} )?{unit_group('src')}$"
)
_GLUED = re.compile(r"(?<=\d)(?=(?:g|kg|mg|km|cm|mm|ml|oz|lbs?|ft|mi|mph|kph|kmh)\b)")
class ConvertSkill:
    """Cooking, weight, distance, temperature, volume, speed and time conversions."""

    name = "convert"

    def warm(self) -> None:
        """Load pint's registry (and the units' sound keys) now rather than on the first
        conversion."""
        registry()
        for name in _spoken_names():
            sound_key(name)

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        request = _GLUED.sub(" ", digits(_ASK.sub("", core(text))).replace("°", " degrees "))
        request = " ".join(request.split())
        if ctx.last is not None and ctx.last.kind == "quantity":
            if (again := _follow_up(request, ctx.last)) is not None:
                return self._said(*again)
        if (compared := compare(request)) is not None:
            return SkillReply(text=compared, skill=self.name)
        m = _FORWARD.match(request) or _BACKWARD.match(request)
        if m is None:
            misheard = _misheard(request)
            return None if misheard is None else self._said(*misheard)
        amount = said_amount(m["n"])
        pair = unit_pair(m["src"], m["dst"])
        if amount is None or pair is None:
            return None
        return self._said(amount, *pair)

    def _said(self, amount: float, src: Unit, dst: Unit) -> SkillReply:
        text, value = _reply(amount, src, dst)
        result = None if value is None else LastResult(
            skill=self.name, kind="quantity", topic=f"{say_number(amount)} {src.many} in {dst.many}",
            value=value, unit=dst.pint, asked=amount, asked_unit=src.pint)
        return SkillReply(text=text, skill=self.name, result=result)


_AGAIN_IN = re.compile(
    rf"^(?:(?:what |how )?about |and )?(?:(?:in|into|to|as) )?{unit_group('dst')}"
    r"(?: then| instead)?$"
    rf"|^how (?:many|much) {unit_group('dst2')}(?: is| would)? (?:that|it)(?: be)?$"
    rf"|^(?:that|it) (?:in|to|into) {unit_group('dst3')}$")
_AGAIN_WITH = re.compile(rf"^(?:(?:what |how )?about |and )?{QTY}(?: {unit_group('src')})?$")


def _follow_up(request: str, last: LastResult) -> tuple[float, Unit, Unit] | None:
    """A follow-up on the last conversion: "and in feet?" (what was asked, in another
    unit), "what about 20 kilometers?" (another amount, to the same unit; to the first
    unit if it is said in the second), "what about 20?" (in the unit asked before)."""
    was_src, was_dst = BY_PINT.get(last.asked_unit or ""), BY_PINT.get(last.unit or "")
    if last.asked is None or was_src is None or was_dst is None:
        return None
    if m := _AGAIN_IN.match(request):
        dst = lookup(m["dst"] or m["dst2"] or m["dst3"])
        return None if dst is None or dst == was_src else (last.asked, was_src, dst)
    m = _AGAIN_WITH.match(request)
    if m is None or (m["src"] is None and not re.search(r"\d", m["n"])):
        return None  # "and the" is nothing; "what about half" is not a number
    amount = said_amount(m["n"])
    src = was_src if m["src"] is None else lookup(m["src"])
    if amount is None or src is None or src.measures != was_dst.measures:
        return None  # another kind of thing: not this conversion again
    return amount, src, was_src if src == was_dst else was_dst


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_SOUNDALIKE_CUTOFF = 0.85
"""Closer than `soundalike.CUTOFF`: unit names are short ("drums" is 0.8 of "grams")."""


_LOOSE_BACKWARD = re.compile(
    r"^how (?:many|much) (?P<dst>[a-z]+(?: [a-z]+)??) (?:are |is |make |makes )?(?:in|to|into|is|are|of) "
    r"(?:(?P<n>an?|the|\d+(?:\.\d+)?) )?(?P<src>[a-z]+(?: [a-z]+){0,2})$")


def _misheard(request: str) -> tuple[float, Unit, Unit] | None:
    """`_misheard_forward`, or a backward question with a unit heard wrong ("how many cups
    are in a court"): the same shape as `_BACKWARD`, each unit said right or sounding like
    one, both measuring the same thing."""
    if (m := _LOOSE_BACKWARD.match(request)) is None:
        return _misheard_forward(request)
    src = _heard_unit(m["src"])
    dst = _heard_unit(m["dst"], other=src)
    amount = said_amount(m["n"])
    if src is None or dst is None or src == dst or src.measures != dst.measures or amount is None:
        return None
    return amount, src, dst


def _misheard_forward(request: str) -> tuple[float, Unit, Unit] | None:
    """A forward conversion heard with a word or two wrong, in a noisy room: "timber, 100
    degrees Fahrenheit, Hector, Celsius" (convert … to …), "convert 100 degrees Fahrenheit
    to solstice". The shape must hold — at most one word before the number, the first
    unit right after it, at most one word between the units, the second unit last — and
    a unit not said right must sound like one (`soundalike`); both must measure the same
    thing (a mismatch is more likely a mishearing than a request to refuse)."""
    words = request.split()
    start = 0 if words and _NUMBER.fullmatch(words[0]) else 1
    if len(words) < start + 3 or not _NUMBER.fullmatch(words[start]):
        return None
    amount, rest = float(words[start]), words[start + 1:]
    for cut in range(1, min(len(rest), 4)):
        for gap in (0, 1):
            said_dst = rest[cut + gap:]
            if not 0 < len(said_dst) <= 3:
                continue
            dst = _heard_unit(" ".join(said_dst))
            src = _heard_unit(" ".join(rest[:cut]), other=dst)
            if src is not None and dst is not None and src != dst and src.measures == dst.measures:
                return amount, src, dst
    return None


@functools.cache
def _spoken_names() -> tuple[str, ...]:
    """Every unit's singular and plural, a temperature's without "degree(s)"."""
    names = (name.lower() for unit in UNITS for name in (unit.one, unit.many))
    return tuple(dict.fromkeys(n.removeprefix("degrees ").removeprefix("degree ") for n in names))


@functools.lru_cache(maxsize=1024)
def _heard_unit(said: str, other: Unit | None = None) -> Unit | None:
    """The unit `said` names, or sounds like ("solstice": Celsius; "degrees solstice" too);
    a bare "degrees" is the temperature scale that is not `other`."""
    if (unit := lookup(said)) is not None:
        return unit
    if said in ("degree", "degrees"):
        return other_scale(other) if other is not None else None
    bare = said.removeprefix("degrees ").removeprefix("degree ")
    near = sounds_like(bare, _spoken_names(), cutoff=_SOUNDALIKE_CUTOFF)
    return None if near is None else lookup(near)


def _reply(amount: float, src: Unit, dst: Unit) -> tuple[str, float | None]:
    """The spoken conversion and its value, or why there is none (and no value)."""
    if {src.measures, dst.measures} == {"volume", "weight"}:
        return f"I can't convert {src.many} to {dst.many}: it depends on what you're measuring.", None
    if src.measures != dst.measures:
        return (f"I can't convert {src.many} to {dst.many}: {src.many} measure "
                f"{MEASURE_WORDS[src.measures]} and {dst.many} measure "
                f"{MEASURE_WORDS[dst.measures]}."), None
    if amount < 0 and src.measures != TEMPERATURE:
        return f"A {MEASURE_WORDS[src.measures]} can't be negative.", None
    ureg = registry()
    value = float(ureg.Quantity(amount, src.pint).to(dst.pint).magnitude)
    question = quantity(say_number(amount), src)
    return f"{question[0].upper()}{question[1:]} is {quantity(say_value(value), dst)}.", value
