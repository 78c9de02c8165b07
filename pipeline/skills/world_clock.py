"""The time in another place: "what time is it in Tokyo", "what's the time difference to
London", "what time zone is Chicago in", and "and in Paris?" after one of them.

A 0.5B model answered "What's the time difference to Tokyo?" with "1 hour" (from London).
The clock can say it exactly: the place's IANA zone and the local zone of `ctx.now` give
both offsets at this instant, daylight saving included. The places and their zones come
from GeoNames' city and country data and the zones' English names from CLDR, loaded by
models/place_data.py and handed in (this room reads no file); the phrasings are data
(world_clock.yaml, Home Assistant's hassil templates) and the place is a wildcard looked
up in the data, so a request naming no known place ("what time is it in the kitchen") is
not matched and goes on to the other skills and the LLM.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from hassil import Intents, SlotList, WildcardSlotList, recognize

from pipeline.skills.base import SkillContext, SkillReply
from pipeline.skills.clock import say_time
from pipeline.skills.phrasing import core

_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_PLACE_EDGES = re.compile(
    r"^(?:the city of |the country of )|(?: (?:right now|right|now|at the moment|currently|"
    r"today|there))+$")
"""Words around the place that are not its name ("…in new delhi right now": "now" is
already gone as a polite tail, pipeline/skills/phrasing.py)."""


@dataclass(frozen=True, kw_only=True)
class Place:
    """A city or country and the zone its clocks keep."""

    name: str
    """As a reply says it: "Tokyo", "Japan", "the United States"."""
    zone: tzinfo
    zone_name: str
    """The zone's English name (CLDR's generic name): "Japan Time", "Central Time"."""
    via: str | None = None
    """A country with several zones: the city whose time is said (its capital)."""


def place_key(name: str) -> str:
    """How a place name is looked up: lower case without accents ("reykjavik"), "st." as
    "saint", no "the", no dots or hyphens."""
    name = "".join(c for c in unicodedata.normalize("NFKD", name.lower())
                   if not unicodedata.combining(c))
    name = name.replace("st. ", "saint ").replace(".", "").replace("-", " ")
    return re.sub(r"^the ", "", " ".join(name.split()))


def _offset(zone: tzinfo, at: datetime) -> timedelta:
    return at.astimezone(zone).utcoffset() or timedelta(0)


def say_span(delta: timedelta) -> str:
    """"9 hours", "5 and a half hours", "5 hours and 45 minutes", "1 hour", "30 minutes"."""
    minutes = round(abs(delta).total_seconds() / 60)
    hours, rest = divmod(minutes, 60)
    if rest == 30 and hours:
        return f"{hours} and a half hours"
    parts = [f"{hours} hour{'s' if hours != 1 else ''}"] if hours else []
    if rest:
        parts.append(f"{rest} minute{'s' if rest != 1 else ''}")
    return " and ".join(parts)


def _where(place: Place) -> str:
    return place.via or place.name


def _lead(place: Place) -> str:
    """A country of several zones says so, and whose time it gives."""
    if place.via is None:
        return ""
    return f"{_upper(place.name)} has several time zones; "


def _upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def time_in(place: Place, now: datetime) -> str:
    there = now.astimezone(place.zone)
    day = "" if there.date() == now.date() else f" on {_WEEKDAYS[there.weekday()]}"
    return _upper(f"{_lead(place)}in {_where(place)}, it's {say_time(there)}{day}.")


def difference(place: Place, now: datetime) -> str:
    delta = _offset(place.zone, now) - _offset(now.tzinfo or place.zone, now)
    where = _upper(_where(place))
    if not delta:
        return _upper(f"{_lead(place)}{where} keeps the same time as you.")
    side = "ahead of" if delta > timedelta(0) else "behind"
    return _upper(f"{_lead(place)}{where} is {say_span(delta)} {side} you.")


def zone(place: Place, now: datetime) -> str:
    return _upper(f"{_lead(place)}{_where(place)} is on {place.zone_name}.")


_REPLIES = {"time_in": time_in, "difference": difference, "zone": zone}
_FOLLOWS = ((re.compile(r"^(?:.+; )?[Ii]n .+, it's "), "time_in"),
            (re.compile(r" (?:ahead of|behind) you\.$| the same time as you\.$"), "difference"),
            (re.compile(r" is on [A-Z][\w ]+\.$"), "zone"))
"""Which question the last reply answered (its wording above), for "and in Paris?"."""


class WorldClockSkill:
    """The time, the time difference and the time zone of a named place."""

    name = "world clock"

    def __init__(self, places: Mapping[str, Place], *, phrasings: Intents, source: str) -> None:
        """`places`: by `place_key`; `phrasings`: world_clock.yaml's templates; `source`:
        where the places come from, each reply's tag (models/place_data.py gives all three)."""
        self._places = places
        self._intents = phrasings
        self._lists: dict[str, SlotList] = {"place": WildcardSlotList(name="place")}
        self._source = source

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        result = recognize(core(text), self._intents, slot_lists=self._lists)
        if result is None or "place" not in result.entities:
            return None
        said = _PLACE_EDGES.sub("", str(result.entities["place"].value).strip(" ?.!"))
        place = self._places.get(place_key(said))
        intent = result.intent.name
        if intent == "follow_up":
            intent = next((kind for pattern, kind in _FOLLOWS if pattern.search(ctx.previous)), "")
        if place is None or intent not in _REPLIES:
            return None
        return SkillReply(text=_REPLIES[intent](place, ctx.now), skill=self.name,
                          source=self._source)
