"""Home Assistant's English intent sentences and apace's own, loaded once for hassil.

This is the I/O half of intent recognition (pipeline/skills/intents.py matches): it reads
the `home-assistant-intents` package's English data and apace's sentence files
(pipeline/skills/sentences/*.yaml, shipped as package data), keeps only the intents apace
answers, and builds one `hassil.Intents` from both.
"""

from __future__ import annotations

import copy
import functools
from importlib.resources import files
from typing import Any

import yaml
from hassil import Intents
from hassil.util import merge_dict
from home_assistant_intents import get_intents

from pipeline.skills.intents import Recognizer

HA_INTENTS = (
    "HassStartTimer", "HassCancelTimer", "HassCancelAllTimers", "HassPauseTimer",
    "HassUnpauseTimer", "HassIncreaseTimer", "HassDecreaseTimer", "HassTimerStatus",
    "HassGetCurrentTime", "HassGetCurrentDate", "HassShoppingListAddItem",
    "HassShoppingListCompleteItem", "HassNevermind", "HassGetWeather",
)
"""The Home Assistant intents apace carries out (docs/intents.md)."""

_LEFT_OUT = ("area", "command")
"""Slot combinations apace has no use for: rooms ("the kitchen timer" is a timer *named*
kitchen here), and HA's delayed commands ("turn off the lights in 5 minutes")."""


def ha_sentences(language: str = "en") -> dict[str, Any]:
    """Home Assistant's sentence data for `HA_INTENTS`, rooms and delayed commands left out."""
    data = get_intents(language)
    if data is None:
        raise RuntimeError(f"home-assistant-intents has no {language!r} sentences; "
                           "pip install -U home-assistant-intents")
    intents: dict[str, Any] = {}
    for name in HA_INTENTS:
        blocks = []
        for block in copy.deepcopy(data["intents"][name]["data"]):
            combo = block.get("metadata", {}).get("slot_combination", "")
            if any(part in combo for part in _LEFT_OUT):
                continue
            block.pop("requires_context", None)  # no HA entities here: "the weather in Paris"
            blocks.append(block)
        intents[name] = {"data": blocks}
    lists = {**data["lists"], "name": {"wildcard": True}}
    return {"language": language, "intents": intents, "lists": lists,
            "expansion_rules": data["expansion_rules"], "skip_words": data.get("skip_words", [])}


def apace_sentences(language: str = "en") -> dict[str, Any]:
    """apace's own sentence file for `language` (package data)."""
    text = (files("pipeline.skills") / "sentences" / f"{language}.yaml").read_text(encoding="utf-8")
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


@functools.cache
def skill_phrasings(filename: str) -> Intents:
    """A skill's own hassil templates, `pipeline/skills/<filename>` (package data): the
    facts, world clock and elements skills' phrasings."""
    text = (files("pipeline.skills") / filename).read_text(encoding="utf-8")
    return Intents.from_dict(yaml.safe_load(text))


@functools.cache
def load_intents(language: str = "en") -> Intents:
    """HA's sentences with apace's added (same-named intents gain apace's data blocks)."""
    merged = ha_sentences(language)
    own = apace_sentences(language)
    for name, intent in own.get("intents", {}).items():
        merged["intents"].setdefault(name, {"data": []})["data"].extend(intent["data"])
    merge_dict(merged["lists"], own.get("lists", {}))
    merge_dict(merged["expansion_rules"], own.get("expansion_rules", {}))
    return Intents.from_dict(merged)


@functools.cache
def load_recognizer(language: str = "en") -> Recognizer:
    """The recognizer every conversation shares (built once: a few milliseconds)."""
    return Recognizer(load_intents(language))
