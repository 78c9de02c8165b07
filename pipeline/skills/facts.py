"""Country facts a small LLM gets wrong — capitals, currencies, continents, populations,
languages, areas, calling codes — answered from offline data (models/country_data.py loads it
and these phrasings, and hands both in).

Measured from outside, Qwen2.5-0.5B answered a country's capital with the country. The
phrasings are data (facts.yaml, Home Assistant's hassil templates), the {country} and
{capital} slot lists come from the country data, and a reply names its source in the
turn's tags. A request that names no known country, or asks what the data does not hold,
is not matched: the LLM answers it ("what is the capital gains tax" stays the LLM's).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from hassil import Intents, TextSlotList, WildcardSlotList, recognize

from pipeline.skills.base import SkillContext, SkillReply
from pipeline.skills.countries import Country
from pipeline.skills.phrasing import core
from pipeline.skills.speech import say_estimate

_DOTTED = re.compile(r"\b(?:[a-z]\.){1,3}[a-z]?\b\.?")
""""u.s.a." / "u.k": Whisper's dotted initials, matched without their dots."""
_PRONOUNS = frozenset({"it", "this", "that", "there", "here", "she", "he"})
""""Is it the capital of France?" names no city: the LLM's."""
_MAGNITUDES = ((1e9, "billion"), (1e6, "million"), (1e3, "thousand"))


def about(n: float) -> str:
    """A large figure as a person says it: "about 209 million", "about 1.4 billion"."""
    for size, word in _MAGNITUDES:
        if n >= size:
            return f"{say_estimate(n / size)} {word}"  # "about" when it was rounded
    scaled = say_estimate(float(f"{n:.2g}"))
    return f"about {scaled}" if float(f"{n:.2g}") != n else scaled


def _capital(c: Country) -> str | None:
    return f"The capital of {c.name} is {c.capital}." if c.capital else None


def _capital_of(c: Country) -> str | None:
    return f"{c.capital} is the capital of {c.name}." if c.capital else None


def _currency(c: Country) -> str | None:
    return f"{_upper(c.name)} uses the {c.currency}." if c.currency else None


def _continent(c: Country) -> str | None:
    return f"{_upper(c.name)} is in {c.continent}." if c.continent else None


def _population(c: Country) -> str | None:
    return f"{_upper(c.name)} has {about(c.population)} people." if c.population else None


def _language(c: Country) -> str | None:
    spoken = c.languages[:3]
    if not spoken:
        return None
    if len(spoken) == 1:
        return f"The main language of {c.name} is {spoken[0]}."
    listed = ", ".join(spoken[:-1]) + " and " + spoken[-1]
    return f"The main languages of {c.name} are {listed}."


def _area(c: Country) -> str | None:
    return (f"{_upper(c.name)} covers {about(c.area_km2)} square kilometres."
            if c.area_km2 else None)


def _calling_code(c: Country) -> str | None:
    if not c.calling_codes:
        return None
    return f"The calling code for {c.name} is " + " or ".join(
        f"plus {code}" for code in c.calling_codes) + "."


def _is_capital(c: Country, place: str) -> str | None:
    """"Is Sydney the capital of Australia?": yes, or no and the right one."""
    if not c.capital or place.strip().lower() in _PRONOUNS:
        return None
    if place.strip().lower() in c.capital_names:
        return f"Yes, {c.capital} is the capital of {c.name}."
    return f"No, the capital of {c.name} is {c.capital}."


def _upper(name: str) -> str:
    return name[:1].upper() + name[1:]


_REPLIES: dict[str, Callable[[Country], str | None]] = {
    "capital": _capital, "capital_of": _capital_of, "currency": _currency,
    "continent": _continent, "population": _population, "language": _language,
    "area": _area, "calling_code": _calling_code,
}


_FOLLOWS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), intent) for pattern, intent in (
        (r"^The capital of .+ is |\bis the capital of |^(?:Yes|No), .*\bcapital of ", "capital"),
        (r"^.+ uses the ", "currency"), (r"^The main languages? of ", "language"),
        (r"^.+ has .+ people\.$", "population"), (r"^.+ covers .+ square kilometres\.$", "area"),
        (r"^The calling code for ", "calling_code"), (r"^.+ is in [A-Z][\w ]+\.$", "continent")))
"""Which question the last reply answered (its wording above), for "and what about X?"."""


def _followed(previous: str) -> str | None:
    return next((intent for pattern, intent in _FOLLOWS if pattern.search(previous)), None)


class FactsSkill:
    """Country facts from offline data, for the phrasings in facts.yaml."""

    name = "facts"

    def __init__(self, countries: Iterable[Country], *, phrasings: Intents, source: str) -> None:
        """`countries`: the data; `phrasings`: facts.yaml's templates; `source`: where the
        data comes from, the tag each reply carries (models/country_data.py gives all three)."""
        self._countries = {c.code: c for c in countries}
        self._intents = phrasings
        capitals: dict[str, Country] = {}
        for country in sorted(self._countries.values(), key=lambda c: c.population or 0):
            for name in country.capital_names:  # two "Kingston"s: the most populous wins
                capitals[name] = country
        self._lists = {
            "country": TextSlotList.from_tuples(
                ((name, c.code) for c in self._countries.values() for name in c.names),
                allow_template=False),
            "capital": TextSlotList.from_tuples(
                ((name, c.code) for name, c in capitals.items()), allow_template=False),
            "place": WildcardSlotList(name="place"),
        }
        self._source = source

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        request = _DOTTED.sub(lambda m: m[0].replace(".", ""), core(text))
        result = recognize(request, self._intents, slot_lists=self._lists)
        if result is None:
            return None
        slots = {name: entity.value for name, entity in result.entities.items()}
        intent = result.intent.name
        if intent == "follow_up":
            intent = _followed(ctx.previous) or ""
            if not intent:  # "and what about Germany?" after something else: the LLM's
                return None
        if intent == "is_capital":
            named = slots.get("place") or self._countries[str(slots["capital"])].capital
            reply = _is_capital(self._countries[str(slots["country"])], str(named))
        else:
            code = slots.get("country") or slots.get("capital")
            reply = _REPLIES[intent](self._countries[str(code)])
        if reply is None:
            return None
        return SkillReply(text=reply, skill=self.name, source=self._source)
