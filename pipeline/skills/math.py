"""Arithmetic said aloud: "what's fifteen percent of eighty" → "15 percent of 80 is 12."

Small LLMs get arithmetic wrong, so a spoken sum is rewritten token by token into a Python
expression and evaluated by simpleeval (no names, no attributes, only + - * / ** and two
roots). Every word must be a token this grammar knows — a number, an operator word, a
currency — or the skill declines: "times square" and "plus size clothing" have words that
are not numbers, so they go to the LLM.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from num2words import num2words
from simpleeval import SimpleEval

from pipeline.skills.base import LastResult, SkillContext, SkillReply
from pipeline.skills.phrasing import core, digits
from pipeline.skills.speech import say_number

MAX_EXPONENT = 1000
"""A larger exponent is refused before it is computed (9 to the 9 to the 9)."""
MAX_MAGNITUDE = 1e15
"""Results beyond this are not worth saying (and Piper reads digits only so far)."""

_ASK = re.compile(
    r"^(?:(?:what does|what do|what(?:'s| is|s)?|how much is|calculate|compute|work out|solve)\s+)+"
)
_ASK_TAIL = re.compile(r"\s+(?:equals?|equal to|make|makes|come to|give|give you|is)$")

_SYMBOL = re.compile(r"\s*([-+*/])\s*")
"""Operator signs get spaces ("17-9" → "17 - 9") so the tokens below see them."""
_NUM = r"\d+(?:\.\d+)?"
_PCT = r"\s*(?:%|percent|per cent)"
_TOKEN = re.compile(
    rf"(?:(?P<pct_off>{_NUM}){_PCT}\s+off"
    rf"|(?:an?\s+)?(?P<tip>{_NUM}){_PCT}\s+tip\s+(?:on|for|of)"
    # "on" and "at" for a quick "of" (Whisper, in a noisy room: "what is 20% on 150").
    rf"|(?P<pct_of>{_NUM}){_PCT}\s+(?:of|on)"
    r"|(?P<frac_top>an?|\d+)\s+(?P<frac_den>halve?s?|quarters?|\d+(?:st|nd|rd|th)s?)\s+of"
    r"|(?P<half>half)\s+of"
    r"|(?P<root>(?:the\s+)?(?:square|cube)\s+root\s+(?:of|on|at))"
    r"|(?P<last>@)"
    rf"|(?:an?\s+)?(?P<num>{_NUM})(?:\s+and\s+(?P<num_frac>a half|a quarter|3 quarters))?"
    r"|point\s+(?P<point>\d+)"
    r"|(?P<plus>plus|\+)"
    r"|(?P<minus>minus|negative|take away|-)"
    r"|(?P<times>times|multiplied by|x|\*)"
    r"|(?P<divide>divided by|over|/)"
    r"|(?P<power>(?:to|raised to)\s+the\s+power(?:\s+of)?|raised to)"
    r"|to\s+the\s+(?P<nth>\d+)(?:st|nd|rd|th)(?:\s+power)?"
    r"|(?P<squared>squared|cubed)"
    r"|(?P<currency>dollars?|bucks?|euros?|pounds?)"
    r")(?:\s+|$)"
)
_BINARY = {"plus": ("+", "plus"), "minus": ("-", "minus"), "times": ("*", "times"),
           "divide": ("/", "divided by"), "power": ("**", "to the power of")}
_NUM_FRACTIONS = {"a half": 0.5, "a quarter": 0.25, "3 quarters": 0.75}
_CURRENCIES = {"dollar": ("dollar", "cent"), "buck": ("dollar", "cent"),
               "euro": ("euro", "cent"), "pound": ("pound", "penny")}
_PENNIES = {"penny": "pence", "cent": "cents"}


class _TooBig(ArithmeticError):
    """The result (or an exponent) is beyond what is worth computing or saying."""


@dataclass
class _Sum:
    """The expression being built: Python for simpleeval, words for the echo."""

    python: list[str]
    spoken: list[str]
    numbers: int = 0
    operators: int = 0
    open_roots: int = 0
    currency: str | None = None
    referent: tuple[str, str, str | None] | None = None
    """The last answer, for `_REFERENT` in the request: Python, spoken, currency."""

    def number(self, value: str, spoken: str) -> None:
        self.python.append(value + ")" * self.open_roots)
        self.spoken.append(spoken)
        self.numbers += 1
        self.open_roots = 0

    def operator(self, python: str, spoken: str) -> None:
        self.python.append(python)
        self.spoken.append(spoken)
        self.operators += 1


class MathSkill:
    """Spoken arithmetic: + - * /, powers, roots, percentages, fractions of a number; and
    a follow-up on the last answer ("add five to that", "and divided by two?")."""

    name = "math"

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        request = _ASK_TAIL.sub("", _ASK.sub("", core(text)))
        said = _SYMBOL.sub(r" \1 ", digits(request)).strip()
        referent = _referent(ctx.last)
        if (follow := _follow_up(said, referent is not None)) is not None:
            if referent is None:
                return self._ask_back(follow, ctx)
            said = follow
        parsed = _parse(said, referent) or _misheard_lead(said)
        if parsed is None:
            return None
        reply = _reply(parsed)
        if reply is None:
            return None
        text, value = reply
        result = None if value is None else LastResult(
            skill=self.name, kind="number", topic=" ".join(parsed.spoken), value=value,
            unit=parsed.currency)
        return SkillReply(text=text, skill=self.name, result=result)

    def _ask_back(self, follow: str, ctx: SkillContext) -> SkillReply | None:
        """"Add 5 to which number?": a sum on "that" with nothing said before it. After
        an answer that was not a number (the LLM's, a date), the LLM reads the words."""
        parsed = _parse(follow, ("0", _REFERENT, None))
        if ctx.last is not None or parsed is None:
            return None
        return SkillReply(text=_what(parsed), skill=self.name)


_REFERENT = "@"
"""Stands for the last answer in a request (`_follow_up`); `_TOKEN` reads it."""
_THAT = re.compile(r"\b(?:that|it|the answer|the result|this)\b")
_IT = r"(?:that|it|this|the answer|the result)"
_VERBS = [(re.compile(pattern), template) for pattern, template in (
    (rf"^(?:subtract|take) {_IT} (?:away )?from (?P<x>.+)$", "{x} minus @"),
    (rf"^divide (?P<x>.+?) by {_IT}$", "{x} divided by @"),
    (rf"^(?:add|plus) (?:another )?(?P<x>.+?)(?: more)?(?: (?:to|on|onto) {_IT})?$", "@ plus {x}"),
    (rf"^(?:subtract|take away|take) (?:another )?(?P<x>.+?)(?: more)?(?: (?:from|off) {_IT})?$",
     "@ minus {x}"),
    (rf"^multiply(?: {_IT})? by (?P<x>.+)$", "@ times {x}"),
    (rf"^divide(?: {_IT})? by (?P<x>.+)$", "@ divided by {x}"),
    (rf"^double {_IT}$", "@ times 2"),
    (rf"^(?:halve|half) {_IT}$", "@ divided by 2"),
    (rf"^(?:square|cube) {_IT}$", "@ {verb}d"),
    (rf"^{_IT} (?P<x>(?:squared|cubed))$", "@ {x}"),
)]
_LEADING_OPERATOR = re.compile(
    r"^(?:plus|times|multiplied by|divided by|to the power|raised to|squared|cubed)\b"
    r"|^(?:minus|take away) \d+(?:\.\d+)?$")
"""A sum that starts with an operator word ("plus 5", "and divided by 2": the "and" is
gone) goes on from the last answer; a leading minus only before a lone number ("minus
5": "minus 5 plus 3" is a sum of its own). Not "over" nor "x" ("what's over 9000")."""


_THEN = re.compile(r"^(?:now|then|next|and then)\s+")
"""How a follow-up starts that `core` leaves ("now add 5", "then minus 4")."""


def _follow_up(said: str, has_referent: bool) -> str | None:
    """`said` with `_REFERENT` for the last answer, when it works on one: "add 5 to that"
    → "@ plus 5", "that divided by 4" → "@ divided by 4", "plus 5" → "@ plus 5". None:
    not a follow-up. One reference at most ("that times that" is not one)."""
    said = _THEN.sub("", said)
    for pattern, template in _VERBS:
        if m := pattern.match(said):
            return template.format(x=m.groupdict().get("x", ""), verb=said.split()[0])
    if len(_THAT.findall(said)) == 1:
        return _THAT.sub(_REFERENT, said)
    if _LEADING_OPERATOR.match(said) and (has_referent or not said.startswith(("minus", "-"))):
        return f"{_REFERENT} {said}"
    return None


def _referent(last: LastResult | None) -> tuple[str, str, str | None] | None:
    """The last answer as `_Sum.referent` wants it: Python, how it was said, currency."""
    if last is None or last.kind != "number" or last.value is None:
        return None
    return repr(last.value), say_number(last.value).removeprefix("about "), last.unit


def _what(total: _Sum) -> str:
    """The question back for a follow-up with nothing to follow: "Add 5 to which number?"."""
    spoken = total.spoken
    rest = " ".join(spoken[2:])
    if len(spoken) > 2 and spoken[0] == _REFERENT and (op := spoken[1]) in _ASK_BACK:
        return f"{_ASK_BACK[op].format(rest=rest)} {_NO_ANSWER}"
    return f"Which number? {_NO_ANSWER}"


_ASK_BACK = {"plus": "Add {rest} to which number?", "minus": "Take {rest} away from which number?",
             "times": "Multiply which number by {rest}?",
             "divided by": "Divide which number by {rest}?"}
_NO_ANSWER = "I have no earlier answer to work on."
"""Said after the question back, and not only to explain it: "Add 5 to what?" alone was
scored an echo of "add 5 to that" (pipeline.quality.is_echo)."""


_LEAD_WORD = re.compile(r"^[a-z']+ (?=\d)")


def _misheard_lead(text: str) -> _Sum | None:
    """A whole sum after one word the ask was misheard as ("calcure 8% on 250" for
    "calculate 8% of 250"): only when what follows the word starts with a number and is
    a complete sum on its own."""
    m = _LEAD_WORD.match(text)
    return _parse(text[m.end():]) if m is not None else None


def _parse(text: str, referent: tuple[str, str, str | None] | None = None) -> _Sum | None:
    """The sum `text` says, or None if any word is not arithmetic or nothing is computed.
    `referent`: the last answer, which `_REFERENT` in `text` stands for."""
    total = _Sum([], [], referent=referent)
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            return None
        pos = m.end()
        kind = m.lastgroup if m.lastgroup != "num_frac" else "num"
        if not _add(total, kind or "", m):
            return None
    if total.numbers == 0 or total.operators == 0 or total.open_roots:
        return None
    return total


def _add(total: _Sum, kind: str, m: re.Match[str]) -> bool:
    """Append token `m` to `total`; False when it cannot go there."""
    if kind in ("num", "point"):
        value = f"0.{m['point']}" if kind == "point" else m["num"]
        spoken = value
        if m["num_frac"]:
            value = repr(float(value) + _NUM_FRACTIONS[m["num_frac"]])
            spoken = f"{m['num']} and {m['num_frac'].replace('3 ', 'three ')}"
        total.number(value, spoken)
    elif kind == "last":
        return _last(total)
    elif kind in _BINARY:
        total.operator(*_BINARY[kind])
    elif kind == "nth":
        total.operator(f"**{m['nth']}", f"to the power of {m['nth']}")
    elif kind == "squared":
        total.operator("**2" if m["squared"] == "squared" else "**3", m["squared"])
    elif kind == "root":
        cube = "cube" in m["root"]
        total.operator("cbrt(" if cube else "sqrt(", f"the {'cube' if cube else 'square'} root of")
        total.open_roots += 1
    elif kind in ("pct_of", "pct_off", "tip"):
        pct = m[kind]
        python = f"(1-{pct}/100)*" if kind == "pct_off" else f"({pct}/100)*"
        words = {"pct_of": "percent of", "pct_off": "percent off", "tip": "percent tip on"}
        total.operator(python, f"{'a ' if kind == 'tip' else ''}{pct} {words[kind]}")
    elif kind in ("frac_den", "half"):
        return _fraction(total, m)
    elif kind == "currency":
        return _currency(total, m["currency"])
    return True


def _fraction(total: _Sum, m: re.Match[str]) -> bool:
    """"a third of", "2 thirds of", "half of" → multiply by the fraction."""
    if m["half"]:
        top, den = 1, 2
    else:
        top = 1 if m["frac_top"] in ("a", "an") else int(m["frac_top"])
        word = m["frac_den"]
        den = 2 if word.startswith("hal") else 4 if word.startswith("quarter") else int(
            re.sub(r"\D", "", word))
    if den < 2 or top == 0:
        return False
    name = {2: "half", 4: "quarter"}.get(den) or num2words(den, to="ordinal")
    if top > 1:
        name = "halves" if den == 2 else name + "s"
    spoken = "half of" if m["half"] else f"{'a' if top == 1 else top} {name} of"
    total.operator(f"({top}/{den})*", spoken)
    return True


def _currency(total: _Sum, word: str) -> bool:
    """A currency after a number: the answer is in it too. Only one currency per sum."""
    unit = _CURRENCIES[word.rstrip("s")][0]
    if total.numbers == 0 or total.currency not in (None, unit):
        return False
    total.currency = unit
    total.spoken[-1] += " " + (unit if total.spoken[-1] == "1" else unit + "s")
    return True


def _last(total: _Sum) -> bool:
    """The last answer as a number of the sum (in its currency, if it had one)."""
    if total.referent is None:
        return False
    python, spoken, currency = total.referent
    total.number(python, spoken)
    return currency is None or _currency(total, currency)


def _power(base: float, exponent: float) -> float:
    if abs(exponent) > MAX_EXPONENT:
        raise _TooBig
    return math.pow(base, exponent)


_OPERATORS: dict[type, Callable[..., float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Pow: _power, ast.USub: operator.neg, ast.UAdd: operator.pos,
}
_FUNCTIONS = {"sqrt": math.sqrt, "cbrt": math.cbrt}


def _reply(total: _Sum) -> tuple[str, float | None] | None:
    """The spoken answer and its value, or the reason there is none (÷0, too big, not
    real) and no value; None when the words do not make a sum after all ("5 5", "plus 3
    times")."""
    evaluator = SimpleEval(operators=_OPERATORS, functions=_FUNCTIONS, names={})
    try:
        value = float(evaluator.eval(" ".join(total.python)))
        if not abs(value) <= MAX_MAGNITUDE:
            raise _TooBig
    except ZeroDivisionError:
        return "That's undefined: you can't divide by zero.", None
    except (_TooBig, OverflowError):
        return "That number is too big for me to say.", None
    except ValueError:
        return "That has no answer in real numbers.", None
    except SyntaxError:
        return None
    question = " ".join(total.spoken)
    answer = _money(value, total.currency) if total.currency else say_number(value)
    return f"{question[0].upper()}{question[1:]} is {answer}.", value


def _money(value: float, unit: str) -> str:
    """"40 dollars", "12 dollars and 50 cents", "about 33 dollars and 33 cents"."""
    cents = round(value * 100)
    about = "about " if not math.isclose(cents, value * 100, abs_tol=1e-6) else ""
    whole, part = divmod(abs(cents), 100)
    sign = "minus " if cents < 0 else ""
    small = _CURRENCIES[unit][1]
    big_words = f"{whole} {unit if whole == 1 else unit + 's'}"
    small_words = f"{part} {small if part == 1 else _PENNIES[small]}"
    if part == 0:
        return f"{about}{sign}{big_words}"
    return f"{about}{sign}{small_words if whole == 0 else f'{big_words} and {small_words}'}"
