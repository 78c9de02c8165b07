"""What the facts skill knows of one country (pipeline/skills/facts.py). The data is loaded
by models/country_data.py (GeoNames and CLDR, as packages ship them, and countries.yaml) and
handed in: this room reads no file of its own."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Country:
    code: str
    """ISO 3166 alpha-2."""
    name: str
    """As a reply says it, with "the" where English puts one ("the Netherlands")."""
    names: tuple[str, ...]
    """Lower-case names a request may use ("the netherlands", "netherlands", "holland")."""
    capital: str | None
    capital_names: tuple[str, ...]
    continent: str | None
    population: int | None
    area_km2: float | None
    currency: str | None
    """As said in a sentence: "Japanese yen", "euro"."""
    languages: tuple[str, ...]
    """Official (or de facto official) languages, most spoken first."""
    calling_codes: tuple[str, ...]
    """"55"; "1 684" (North American numbering plan areas)."""
