"""Which request a transcript is, by Home Assistant's engine: hassil over sentence templates.

Phrasings are data: Home Assistant's own English sentences (the `home-assistant-intents`
package) and apace's (pipeline/skills/sentences/*.yaml), in hassil's template format, are
loaded once by `models.intents` and handed in here as `hassil.Intents`. This module only
matches: no file I/O, well under a millisecond per utterance (docs/intents.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hassil import Intents, RecognizeResult, recognize_ranked

from pipeline.skills.when import fix_meridiem
from pipeline.skills.words import to_digits


@dataclass(frozen=True, kw_only=True)
class Recognised:
    """One recognised request: the intent's name and its slots."""

    intent: str
    slots: Mapping[str, Any] = field(default_factory=dict)
    """Each slot's value: a number for a range list, the words for a wildcard."""
    words: Mapping[str, str] = field(default_factory=dict)
    """Each slot as it was said."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """The matched sentence block's `metadata` (apace's: {"morning": true} for "wake me")."""

    def number(self, slot: str) -> float:
        """A numeric slot's value, 0 when absent."""
        value = self.slots.get(slot)
        return float(value) if isinstance(value, (int, float)) else 0.0

    def text(self, slot: str) -> str | None:
        value = self.slots.get(slot)
        return str(value).strip() if value not in (None, "") else None


class Recognizer:
    """Matches normalised transcripts against the loaded intents (`models.intents.load`)."""

    def __init__(self, intents: Intents) -> None:
        self._intents = intents

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._intents.intents)

    def recognise(self, text: str) -> list[Recognised]:
        """The matches for `text` (already through `base.normalise`), best first (hassil's
        ranking: fewest wildcards, most literal words); empty when nothing matches.

        More than one when a wildcard can be read two ways ("set a pizza timer for 10
        minutes": is "pizza" the {duration}?): the caller takes the first whose slots make
        sense. Numbers are written as digits first ("ten minute timer" → "10 minute
        timer"), as the regex skills do, so a template says `{minutes}` once for both ways
        Whisper writes a number.
        """
        words = fix_meridiem(to_digits(text)).strip()
        if not words:
            return []
        results = recognize_ranked(words, self._intents, language=self._intents.language)
        return [_recognised(result) for result in results[:_MOST]]


_MOST = 4
"""Readings looked at per utterance (the first one almost always makes sense)."""


def _recognised(result: RecognizeResult) -> Recognised:
    slots = {name: entity.value for name, entity in result.entities.items()}
    said = {name: entity.text.strip() for name, entity in result.entities.items()}
    return Recognised(intent=result.intent.name, slots=slots, words=said,
                      metadata=dict(result.intent_metadata or {}))
