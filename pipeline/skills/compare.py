"""Two quantities compared aloud: "is an hour longer than 50 minutes?" → "Yes: 1 hour is
60 minutes."; "which is heavier, a pound or a kilogram?" → "1 kilogram is heavier: 1 pound
is about 0.45 kilograms."

The units are the conversion table's (pipeline.skills.units) and pint does the arithmetic;
the comparative must fit what the units measure ("longer" a distance or a time, "heavier"
a weight), else the words are left to the LLM. The conversion skill asks this module
first (pipeline.skills.convert).
"""

from __future__ import annotations

import math
import re

from pipeline.skills.speech import say_number
from pipeline.skills.units import QTY, Unit, quantity, registry, said_amount, say_value, unit_group, unit_pair

_ANY = ("distance", "weight", "volume", "time", "speed", "temperature")
_MORE = {"longer": ("distance", "time"), "taller": ("distance",), "further": ("distance",),
         "farther": ("distance",), "bigger": _ANY, "larger": _ANY, "greater": _ANY, "more": _ANY,
         "heavier": ("weight",), "hotter": ("temperature",), "warmer": ("temperature",),
         "faster": ("speed",)}
_LESS = {"shorter": ("distance", "time"), "smaller": _ANY, "less": _ANY, "lighter": ("weight",),
         "colder": ("temperature",), "cooler": ("temperature",), "slower": ("speed",)}
_WORDS = "|".join(sorted([*_MORE, *_LESS], key=len, reverse=True))


def _side(name: str) -> str:
    return QTY.replace("?P<n>", f"?P<n{name}>") + " " + unit_group(name)


_IS = re.compile(rf"^(?:is|are) {_side('a')} (?P<cmp>{_WORDS}) than {_side('b')}$")
_WHICH = re.compile(
    rf"^(?:which|what)(?: one)? is (?P<cmp>{_WORDS}) {_side('a')} or {_side('b')}$")


def compare(request: str) -> str | None:
    """The spoken answer to `request` (normalised as the conversion skill does: lower
    case, numbers as digits, no punctuation), or None: not a comparison it can make."""
    m = _IS.match(request) or _WHICH.match(request)
    if m is None:
        return None
    pair = unit_pair(m["a"], m["b"])
    first, second = said_amount(m["na"]), said_amount(m["nb"])
    word = m["cmp"]
    if pair is None or first is None or second is None:
        return None
    a, b = pair
    if a.measures != b.measures or a.measures not in {**_MORE, **_LESS}[word]:
        return None
    value = float(registry().Quantity(first, a.pint).to(b.pint).magnitude)
    same = math.isclose(value, second, rel_tol=1e-9, abs_tol=1e-9)
    first_is_more = value > second and not same
    holds = first_is_more if word in _MORE else (value < second and not same)
    how = f"{_said(first, a)} is {quantity(say_value(value), b)}"
    if m.re is _IS:
        return f"{'Yes' if holds else 'No'}: {how}." if not same else f"No, they're the same: {how}."
    if same:
        return f"Neither, they're the same: {how}."
    winner = _said(first, a) if holds else _said(second, b)
    return f"{winner[0].upper()}{winner[1:]} is {word}: {how}."


def _said(amount: float, unit: Unit) -> str:
    return quantity(say_number(amount), unit)
