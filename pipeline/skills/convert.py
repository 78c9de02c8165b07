"""Unit conversions said aloud: "how many grams in three ounces" → "3 ounces is about 85 grams."

Cooking, weight, distance, temperature, volume and speed, the conversions people ask a
kitchen or car assistant for. pint does the arithmetic (offset temperatures included);
this module only knows how the units are said, including the spellings Whisper writes
("kilometres", "litre", "farenheit"). Only units in the table are matched, and the whole
request must be a conversion, so anything else is left to the LLM.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipeline.skills.base import LastResult, SkillContext, SkillReply
from pipeline.skills.phrasing import core, digits
from pipeline.skills.soundalike import sound_key, sounds_like
from pipeline.skills.speech import say_estimate, say_number
from pipeline.skills.words import parse_number

if TYPE_CHECKING:
    import pint


@dataclass(frozen=True, kw_only=True)
class Unit:
    """A unit as spoken: pint's name for it, its singular and plural, what it measures."""

    pint: str
    one: str
    many: str
    measures: str
    said: str
    """A regex of how people (and Whisper) say it."""


_TEMPERATURE = "temperature"
# pint's "cup", "pint", "quart", "gallon" and "fluid_ounce" are US customary measures
# (a cup is 236.6 ml): the voice is US English, and US recipes are what people convert.
UNITS = (
    Unit(pint="cup", one="cup", many="cups", measures="volume", said=r"cups?"),
    Unit(pint="tablespoon", one="tablespoon", many="tablespoons", measures="volume",
         said=r"tables? ?spoons?|tbsps?"),
    Unit(pint="teaspoon", one="teaspoon", many="teaspoons", measures="volume",
         said=r"tea ?spoons?|tsps?"),
    Unit(pint="milliliter", one="milliliter", many="milliliters", measures="volume",
         said=r"millilit(?:er|re)s?|mls?"),
    Unit(pint="liter", one="liter", many="liters", measures="volume", said=r"lit(?:er|re)s?"),
    Unit(pint="fluid_ounce", one="fluid ounce", many="fluid ounces", measures="volume",
         said=r"fluid ounces?|fl oz"),
    Unit(pint="gallon", one="gallon", many="gallons", measures="volume", said=r"gallons?"),
    Unit(pint="quart", one="quart", many="quarts", measures="volume", said=r"quarts?"),
    Unit(pint="pint", one="pint", many="pints", measures="volume", said=r"pints?"),
    Unit(pint="ounce", one="ounce", many="ounces", measures="weight", said=r"ounces?|oz"),
    Unit(pint="pound", one="pound", many="pounds", measures="weight", said=r"pounds?|lbs?"),
    Unit(pint="gram", one="gram", many="grams", measures="weight", said=r"grams?|grammes?|g"),
    Unit(pint="kilogram", one="kilogram", many="kilograms", measures="weight",
         said=r"kilo ?grams?|kilogrammes?|kilos?|kgs?"),
    Unit(pint="milligram", one="milligram", many="milligrams", measures="weight",
         said=r"milligrams?|mg"),
    Unit(pint="mile", one="mile", many="miles", measures="distance", said=r"miles?|mi"),
    Unit(pint="kilometer", one="kilometer", many="kilometers", measures="distance",
         said=r"kilomet(?:er|re)s?|kms?"),
    Unit(pint="foot", one="foot", many="feet", measures="distance", said=r"feet|foot|ft"),
    Unit(pint="meter", one="meter", many="meters", measures="distance", said=r"met(?:er|re)s?"),
    Unit(pint="inch", one="inch", many="inches", measures="distance", said=r"inch(?:es)?"),
    Unit(pint="centimeter", one="centimeter", many="centimeters", measures="distance",
         said=r"centimet(?:er|re)s?|cms?"),
    Unit(pint="millimeter", one="millimeter", many="millimeters", measures="distance",
         said=r"millimet(?:er|re)s?|mms?"),
    Unit(pint="yard", one="yard", many="yards", measures="distance", said=r"yards?|yds?"),
    Unit(pint="degF", one="degree Fahrenheit", many="degrees Fahrenheit", measures=_TEMPERATURE,
         said=r"(?:degrees? )?(?:fahrenheit|farenheit|fahrenheight|farenheight)|degrees? f"),
    Unit(pint="degC", one="degree Celsius", many="degrees Celsius", measures=_TEMPERATURE,
         said=r"(?:degrees? )?(?:celsius|celcius|centigrade)|degrees? c"),
    Unit(pint="kelvin", one="kelvin", many="kelvin", measures=_TEMPERATURE,
         said=r"(?:degrees? )?kelvins?"),
    # Time: "how many days are in a week", "how many minutes in 2 hours". A year is the
    # calendar's 365 days (pint's "year" is the Julian 365.25), a month a twelfth of it
    # (`registry` defines them).
    Unit(pint="second", one="second", many="seconds", measures="time", said=r"seconds?|secs?"),
    Unit(pint="minute", one="minute", many="minutes", measures="time", said=r"minutes?|mins?"),
    Unit(pint="hour", one="hour", many="hours", measures="time", said=r"hours?|hrs?"),
    Unit(pint="day", one="day", many="days", measures="time", said=r"days?"),
    Unit(pint="week", one="week", many="weeks", measures="time", said=r"weeks?"),
    Unit(pint="fortnight", one="fortnight", many="fortnights", measures="time",
         said=r"fortnights?"),
    Unit(pint="calendar_month", one="month", many="months", measures="time",
         said=r"months?"),
    Unit(pint="calendar_year", one="year", many="years", measures="time", said=r"years?"),
    Unit(pint="calendar_decade", one="decade", many="decades", measures="time", said=r"decades?"),
    Unit(pint="calendar_century", one="century", many="centuries", measures="time",
         said=r"century|centuries"),
    Unit(pint="mph", one="mile per hour", many="miles per hour", measures="speed",
         said=r"miles? (?:per|an|a) hour|mph"),
    Unit(pint="km/h", one="kilometer per hour", many="kilometers per hour", measures="speed",
         said=r"kilomet(?:er|re)s? (?:per|an|a) hour|km ?/ ?h|kph|kmh|km per hour|kms? an hour"),
    Unit(pint="m/s", one="meter per second", many="meters per second", measures="speed",
         said=r"met(?:er|re)s? (?:per|a) second|m ?/ ?s"),
)
_DEGREES = "degrees"
"""A bare "degrees": the scale is the one the request converts to the other of."""
_MEASURE_WORDS = {"distance": "distance", "weight": "weight", "volume": "volume",
                  _TEMPERATURE: "temperature", "speed": "speed", "time": "time"}


def _unit_group(name: str) -> str:
    alternatives = sorted(
        [alt for unit in UNITS for alt in _alternatives(unit.said)] + ["degrees?"],
        key=len, reverse=True,
    )
    return rf"(?P<{name}>{'|'.join(alternatives)})"


def _alternatives(said: str) -> list[str]:
    """Top-level alternatives of a unit's regex, so the longest is tried first overall."""
    depth, parts, start = 0, [], 0
    for i, char in enumerate(said):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "|" and depth == 0:
            parts.append(said[start:i])
            start = i + 1
    return [*parts, said[start:]]


_QTY = (r"(?P<n>(?:minus |negative |- ?)?\d+(?:\.\d+)?(?: and (?:a half|a quarter|3 quarters))?"
        r"|an?|the|half an?|half|a half|a quarter(?: of an?)?|3 quarters(?: of an?)?)")
_ASK = re.compile(r"^(?:(?:what(?:'s| is|s)?|how much is|convert|change|turn)\s+)+")
_FORWARD = re.compile(
    rf"^{_QTY} {_unit_group('src')} "
    # "and": Whisper often writes a quick "in" as "and" ("100 Fahrenheit and Celsius").
    rf"(?:to|in|into|in to|as|and|is how many|are how many|equals how many|is what in) "
    rf"{_unit_group('dst')}$"
)
_BACKWARD = re.compile(
    rf"^how (?:many|much) {_unit_group('dst')} "
    r"(?:(?:are there|are|is|make|makes|would be|equals?|go) )?(?:(?:in|to|into|is|are|of) )?"
    rf"(?:{_QTY} )?{_unit_group('src')}$"
)
_GLUED = re.compile(r"(?<=\d)(?=(?:g|kg|mg|km|cm|mm|ml|oz|lbs?|ft|mi|mph|kph|kmh)\b)")
_FRACTION_WORDS = {"half": 0.5, "a half": 0.5, "half a": 0.5, "half an": 0.5,
                   "a quarter": 0.25, "3 quarters": 0.75}


@functools.cache
def registry() -> pint.UnitRegistry[float]:
    """pint's registry, imported and built once on first use: ~0.15 s to import pint (after
    numpy) and ~0.15 s to build the registry on this box; every later conversion takes
    ~20 µs. `ConvertSkill.warm` does it at start-up, off the first conversion's path."""
    import pint

    units: pint.UnitRegistry[float] = pint.UnitRegistry()
    units.define("calendar_year = 365 * day")
    units.define("calendar_month = calendar_year / 12")
    units.define("calendar_decade = 10 * calendar_year")
    units.define("calendar_century = 100 * calendar_year")
    return units


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
        m = _FORWARD.match(request) or _BACKWARD.match(request)
        if m is None:
            misheard = _misheard(request)
            return None if misheard is None else self._said(*misheard)
        amount = _amount(m["n"])
        units = _units(m["src"], m["dst"])
        if amount is None or units is None:
            return None
        return self._said(amount, *units)

    def _said(self, amount: float, src: Unit, dst: Unit) -> SkillReply:
        text, value = _reply(amount, src, dst)
        result = None if value is None else LastResult(
            skill=self.name, kind="quantity", topic=f"{say_number(amount)} {src.many} in {dst.many}",
            value=value, unit=dst.pint, asked=amount, asked_unit=src.pint)
        return SkillReply(text=text, skill=self.name, result=result)


_AGAIN_IN = re.compile(
    rf"^(?:(?:what |how )?about |and )?(?:(?:in|into|to|as) )?{_unit_group('dst')}"
    r"(?: then| instead)?$"
    rf"|^how (?:many|much) {_unit_group('dst2')}(?: is| would)? (?:that|it)(?: be)?$"
    rf"|^(?:that|it) (?:in|to|into) {_unit_group('dst3')}$")
_AGAIN_WITH = re.compile(rf"^(?:(?:what |how )?about |and )?{_QTY}(?: {_unit_group('src')})?$")


def _follow_up(request: str, last: LastResult) -> tuple[float, Unit, Unit] | None:
    """A follow-up on the last conversion: "and in feet?" (what was asked, in another
    unit), "what about 20 kilometers?" (another amount, to the same unit; to the first
    unit if it is said in the second), "what about 20?" (in the unit asked before)."""
    was_src, was_dst = _BY_PINT.get(last.asked_unit or ""), _BY_PINT.get(last.unit or "")
    if last.asked is None or was_src is None or was_dst is None:
        return None
    if m := _AGAIN_IN.match(request):
        dst = _lookup(m["dst"] or m["dst2"] or m["dst3"])
        return None if dst is None or dst == was_src else (last.asked, was_src, dst)
    m = _AGAIN_WITH.match(request)
    if m is None or (m["src"] is None and not re.search(r"\d", m["n"])):
        return None  # "and the" is nothing; "what about half" is not a number
    amount = _amount(m["n"])
    src = was_src if m["src"] is None else _lookup(m["src"])
    if amount is None or src is None or src.measures != was_dst.measures:
        return None  # another kind of thing: not this conversion again
    return amount, src, was_src if src == was_dst else was_dst


def _amount(said: str | None) -> float | None:
    """The quantity: "a pound" and "a mile" are one, "half a cup" a half."""
    if said is None or said in ("a", "an", "the"):
        return 1.0
    if said.startswith(("a quarter", "3 quarters", "half", "a half")):
        return _FRACTION_WORDS[" ".join(said.split()[:2]) if said[0] in "a3" else "half"]
    return parse_number(said.replace("- ", "-"))


_BY_PINT = {unit.pint: unit for unit in UNITS}


@functools.cache
def _lookup(said: str) -> Unit | None:
    for unit in UNITS:
        if re.fullmatch(unit.said, said):
            return unit
    return None


def _units(src_said: str, dst_said: str) -> tuple[Unit, Unit] | None:
    """The two units; a bare "degrees" takes the other temperature scale (70 degrees to
    Celsius is Fahrenheit). Ounces with a volume are fluid ounces: nobody weighs milk."""
    src, dst = _lookup(src_said), _lookup(dst_said)
    if src is None and dst is not None and src_said.startswith(_DEGREES[:6]):
        src = _other_scale(dst)
    if src is None or dst is None:
        return None
    fluid = _lookup("fluid ounces")
    if src.pint == "ounce" and dst.measures == "volume":
        src = fluid or src
    if dst.pint == "ounce" and src.measures == "volume":
        dst = fluid or dst
    return src, dst


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
    amount = _amount(m["n"])
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
    if (unit := _lookup(said)) is not None:
        return unit
    if said in ("degree", "degrees"):
        return _other_scale(other) if other is not None else None
    bare = said.removeprefix("degrees ").removeprefix("degree ")
    near = sounds_like(bare, _spoken_names(), cutoff=_SOUNDALIKE_CUTOFF)
    return None if near is None else _lookup(near)


def _other_scale(unit: Unit) -> Unit | None:
    other = {"degC": "fahrenheit", "degF": "celsius"}.get(unit.pint)
    return _lookup(other) if other else None


def _reply(amount: float, src: Unit, dst: Unit) -> tuple[str, float | None]:
    """The spoken conversion and its value, or why there is none (and no value)."""
    if {src.measures, dst.measures} == {"volume", "weight"}:
        return f"I can't convert {src.many} to {dst.many}: it depends on what you're measuring.", None
    if src.measures != dst.measures:
        return (f"I can't convert {src.many} to {dst.many}: {src.many} measure "
                f"{_MEASURE_WORDS[src.measures]} and {dst.many} measure "
                f"{_MEASURE_WORDS[dst.measures]}."), None
    if amount < 0 and src.measures != _TEMPERATURE:
        return f"A {_MEASURE_WORDS[src.measures]} can't be negative.", None
    ureg = registry()
    value = float(ureg.Quantity(amount, src.pint).to(dst.pint).magnitude)
    exact = math.isclose(value, round(value, 2), rel_tol=1e-9, abs_tol=1e-9)
    said = say_number(value) if exact else say_estimate(value)
    question = _quantity(say_number(amount), src)
    return f"{question[0].upper()}{question[1:]} is {_quantity(said, dst)}.", value


def _quantity(number: str, unit: Unit) -> str:
    """"3 ounces", "1 cup", "about 1 cup", "half a cup", "a quarter of a cup"."""
    bare = number.removeprefix("about ")
    about = number[: len(number) - len(bare)]
    if bare == "1":
        return f"{number} {unit.one}"
    article = "an" if unit.one[0] in "aeiou" else "a"
    if bare == "a half":
        return f"{about}half {article} {unit.one}"
    if bare in ("a quarter", "three quarters"):
        return f"{about}{bare} of {article} {unit.one}"
    return f"{number} {unit.many}"
