"""The chemical elements: "what is the chemical symbol for gold", "what is the atomic number
of carbon", "which element has the symbol Fe", "what element is number 26", "what is the
atomic mass of iron", and "and for silver?" after one of them.

A small LLM's chemistry is a guess: Qwen2.5-Coder-0.5B missed gold's symbol on the knowledge
bench (docs/llm-choice.md). The periodic table is data: models/element_data.py loads it from
the `periodictable` package and hands it in (this room reads no file); the phrasings are
data (elements.yaml, Home Assistant's hassil templates), the element names a slot list,
and a symbol or a number is a wildcard looked up in the table, so a request naming no
element ("what is the symbol for love") is left to the LLM.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hassil import Intents, SlotList, TextSlotList, WildcardSlotList, recognize

from pipeline.skills.base import SkillContext, SkillReply
from pipeline.skills.phrasing import core, digits


@dataclass(frozen=True, kw_only=True)
class Element:
    number: int
    symbol: str
    name: str
    """Lower case, as a sentence says it: "gold"."""
    mass: float | None
    """Standard atomic weight in daltons (None: none, a synthetic element's)."""


def spelled(symbol: str) -> str:
    """A symbol as Piper should say it: letter by letter ("A, U"), never as a word ("Au")."""
    return ", ".join(symbol.upper())


def _upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def _symbol(e: Element) -> str:
    return f"The chemical symbol for {e.name} is {spelled(e.symbol)}."


def _number(e: Element) -> str:
    return f"The atomic number of {e.name} is {e.number}."


def _mass(e: Element) -> str | None:
    if e.mass is None:
        return None
    return f"The atomic mass of {e.name} is about {e.mass:.5g}."


def _named(e: Element) -> str:
    return f"{_upper(e.name)} is element number {e.number}, symbol {spelled(e.symbol)}."


_REPLIES: dict[str, Callable[[Element], str | None]] = {
    "symbol": _symbol, "number": _number, "mass": _mass, "by_symbol": _named,
    "by_number": _named,
}
_FOLLOWS = ((re.compile(r"^The chemical symbol for "), "symbol"),
            (re.compile(r"^The atomic number of "), "number"),
            (re.compile(r"^The atomic mass of "), "mass"))
"""Which question the last reply answered (its wording above), for "and for silver?"."""
_SYMBOL_SAID = re.compile(r"^[a-z](?:[ ,.-]*[a-z])?$")
"""A symbol as Whisper writes it: "fe", "f e", "f.e.", "F-E" (case already folded)."""


class ElementsSkill:
    """Symbols, atomic numbers and masses from the periodic table."""

    name = "elements"

    def __init__(self, elements: Iterable[Element], *, phrasings: Intents, source: str) -> None:
        """`elements`: the table; `phrasings`: elements.yaml's templates; `source`: where the
        table comes from, each reply's tag (models/element_data.py gives all three)."""
        table = list(elements)
        self._by_number = {e.number: e for e in table}
        self._by_symbol = {e.symbol.lower(): e for e in table}
        self._intents = phrasings
        self._lists: dict[str, SlotList] = {
            "element": TextSlotList.from_tuples(((e.name, e.number) for e in table),
                                                allow_template=False),
            "symbol": WildcardSlotList(name="symbol"),
            "number": WildcardSlotList(name="number"),
        }
        self._source = source

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        result = recognize(digits(core(text)), self._intents, slot_lists=self._lists)
        if result is None:
            return None
        intent = result.intent.name
        if intent == "follow_up":
            intent = next((kind for pattern, kind in _FOLLOWS if pattern.search(ctx.previous)), "")
        element = self._element({name: str(e.value) for name, e in result.entities.items()})
        reply = _REPLIES[intent](element) if element is not None and intent in _REPLIES else None
        if reply is None:
            return None
        return SkillReply(text=reply, skill=self.name, source=self._source)

    def _element(self, slots: dict[str, str]) -> Element | None:
        if "element" in slots:
            return self._by_number.get(int(slots["element"]))
        if "number" in slots:
            said = slots["number"].strip(" ?.!")
            return self._by_number.get(int(said)) if said.isdigit() else None
        said = slots.get("symbol", "").strip(" ?.!")
        if not _SYMBOL_SAID.match(said):
            return None
        return self._by_symbol.get(re.sub(r"[ ,.-]", "", said))
