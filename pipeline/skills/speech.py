"""How a skill writes a number so that Piper says it right and a listener can follow it.

Piper (espeak-ng) reads digits well: "1234567" is "one million two hundred…", "-5" is
"minus five", "3.14" is "three point one four". So numbers stay digits, which also keeps
the on-screen transcript readable. Two things it cannot do: read 1.5 as "one and a half"
(it says "one point five"), and know how precise an answer should sound. So halves and
quarters become words (num2words), and a value that had to be rounded says "about".
"""

from __future__ import annotations

import math

from num2words import num2words

_FRACTIONS = {0.5: "a half", 0.25: "a quarter", 0.75: "three quarters"}
_WORDS_BELOW = 1000
"""Whole parts under this are written as words before "and a half"; above, digits read
the same and are easier to see."""
_NOISE_DIGITS = 12
"""Float noise (0.1 + 0.2, 1/3*90) is dropped at this many significant digits."""


def say_number(x: float, *, places: int = 2) -> str:
    """`x` as a reply says it: integers plain ("12"), others to at most `places`
    decimals ("3.14"), halves and quarters in words ("two and a half"), and "about" in
    front when rounding changed the value ("about 14.29"). Values too small for `places`
    keep two significant figures ("about 0.0012") instead of collapsing to 0."""
    value = _denoise(x)
    if value == int(value):
        return _digits(value, 0)
    places = max(places, _places_for_figures(value, 2))
    shown = round(value, places)
    text = _fraction_words(shown) or _digits(shown, places)
    return f"about {text}" if not math.isclose(shown, value, rel_tol=1e-12) else text


def say_estimate(x: float) -> str:
    """`x` as an estimate says it (unit conversions): whole numbers from 10 up ("about
    21"), two significant figures below ("about 1.6", "about 0.47"). A conversion is a
    kitchen or road figure: "about 21 degrees" is what a person says, not "21.11"."""
    value = _denoise(x)
    if value == int(value):
        return _digits(value, 0)
    places = 0 if abs(value) >= 10 else _places_for_figures(value, 2)
    shown = round(value, places)
    text = _fraction_words(shown) or _digits(shown, places)
    return f"about {text}" if not math.isclose(shown, value, rel_tol=1e-12) else text


def ordinal(n: int) -> str:
    """1 → "1st", 22 → "22nd", 13 → "13th": Piper reads these as ordinals."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def counted(n: float, singular: str, plural: str | None = None) -> str:
    """"1 day", "3 days", "about 2.1 cups": the number said by `say_number`, the noun in
    the number it needs (singular only for exactly one)."""
    word = singular if n == 1 else plural or singular + "s"
    return f"{say_number(n)} {word}"


def _denoise(x: float) -> float:
    if x == 0 or not math.isfinite(x):
        return x
    return float(f"{x:.{_NOISE_DIGITS}g}")


def _places_for_figures(value: float, figures: int) -> int:
    """Decimals needed to keep `figures` significant figures of `value` (|value| < 10)."""
    return max(0, figures - 1 - math.floor(math.log10(abs(value))))


def _digits(value: float, places: int) -> str:
    """Plain digits, never scientific notation; a minus sign Piper reads as "minus"."""
    text = f"{abs(value):.{places}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"minus {text}" if value < 0 and text != "0" else text


def _fraction_words(value: float) -> str | None:
    """"two and a half", "a quarter", "minus three quarters": only exact halves and
    quarters of modest size, the fractions people say as words."""
    whole, frac = divmod(abs(value), 1)
    if frac not in _FRACTIONS or whole >= _WORDS_BELOW:
        return None
    words = _FRACTIONS[frac] if whole == 0 else f"{num2words(int(whole))} and {_FRACTIONS[frac]}"
    return f"minus {words}" if value < 0 else words
