"""The periodic table, loaded for the elements skill (pipeline/skills/elements.py), with its
phrasings (elements.yaml): the file half of that skill.

The table comes from the `periodictable` package (public domain; NIST's atomic weights):
each element's atomic number, symbol, English name and standard atomic weight. The
neutron (element 0 in that package) is left out.
"""

from __future__ import annotations

from functools import cache
from importlib import metadata

from hassil import Intents

from models.intents import skill_phrasings
from pipeline.skills.elements import Element, ElementsSkill


def elements_skill() -> ElementsSkill:
    return ElementsSkill(load_elements(), phrasings=elements_phrasings(), source=source())


def elements_phrasings() -> Intents:
    return skill_phrasings("elements.yaml")


def source() -> str:
    return f"the periodic table of the periodictable package {metadata.version('periodictable')}"


@cache
def load_elements() -> tuple[Element, ...]:
    import periodictable

    out = []
    for element in periodictable.elements:
        if element.number < 1:
            continue  # the neutron
        mass = float(element.mass) if element.mass else None
        out.append(Element(number=int(element.number), symbol=str(element.symbol),
                           name=str(element.name).lower(), mass=mass))
    return tuple(out)
