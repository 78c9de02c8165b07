"""How units are said, and what they are: the table the conversion and comparison skills
share (pipeline.skills.convert, pipeline.skills.compare).

Cooking, weight, distance, temperature, volume, speed and time, with the spellings Whisper
writes ("kilometres", "litre", "farenheit"); pint does the arithmetic. Only units in the
table are matched, so anything else is left to the LLM.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

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


TEMPERATURE = "temperature"
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
    Unit(pint="degF", one="degree Fahrenheit", many="degrees Fahrenheit", measures=TEMPERATURE,
         said=r"(?:degrees? )?(?:fahrenheit|farenheit|fahrenheight|farenheight)|degrees? f"),
    Unit(pint="degC", one="degree Celsius", many="degrees Celsius", measures=TEMPERATURE,
         said=r"(?:degrees? )?(?:celsius|celcius|centigrade)|degrees? c"),
    Unit(pint="kelvin", one="kelvin", many="kelvin", measures=TEMPERATURE,
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
DEGREES = "degrees"
"""A bare "degrees": the scale is the one the request converts to the other of."""
MEASURE_WORDS = {"distance": "distance", "weight": "weight", "volume": "volume",
                  TEMPERATURE: "temperature", "speed": "speed", "time": "time"}


def unit_group(name: str) -> str:
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


QTY = (r"(?P<n>(?:minus |negative |- ?)?\d+(?:\.\d+)?(?: and (?:a half|a quarter|3 quarters))?"
        r"|an?|the|half an?|half|a half|a quarter(?: of an?)?|3 quarters(?: of an?)?)")

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



def said_amount(said: str | None) -> float | None:
    """The quantity: "a pound" and "a mile" are one, "half a cup" a half."""
    if said is None or said in ("a", "an", "the"):
        return 1.0
    if said.startswith(("a quarter", "3 quarters", "half", "a half")):
        return _FRACTION_WORDS[" ".join(said.split()[:2]) if said[0] in "a3" else "half"]
    return parse_number(said.replace("- ", "-"))


BY_PINT = {unit.pint: unit for unit in UNITS}


@functools.cache
def lookup(said: str) -> Unit | None:
    for unit in UNITS:
        if re.fullmatch(unit.said, said):
            return unit
    return None


def unit_pair(src_said: str, dst_said: str) -> tuple[Unit, Unit] | None:
    """The two units; a bare "degrees" takes the other temperature scale (70 degrees to
    Celsius is Fahrenheit). Ounces with a volume are fluid ounces: nobody weighs milk."""
    src, dst = lookup(src_said), lookup(dst_said)
    if src is None and dst is not None and src_said.startswith(DEGREES[:6]):
        src = other_scale(dst)
    if src is None or dst is None:
        return None
    fluid = lookup("fluid ounces")
    if src.pint == "ounce" and dst.measures == "volume":
        src = fluid or src
    if dst.pint == "ounce" and src.measures == "volume":
        dst = fluid or dst
    return src, dst



def other_scale(unit: Unit) -> Unit | None:
    other = {"degC": "fahrenheit", "degF": "celsius"}.get(unit.pint)
    return lookup(other) if other else None


def say_value(value: float) -> str:
    """A computed amount as said: exact ("60"), or "about 1.1"."""
    exact = math.isclose(value, round(value, 2), rel_tol=1e-9, abs_tol=1e-9)
    return say_number(value) if exact else say_estimate(value)


def quantity(number: str, unit: Unit) -> str:
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
