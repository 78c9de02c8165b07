"""Piper through the pipeline's synthesizer: 16 kHz audio that starts with the voice."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pipeline.tts import LEAD_KEPT, PiperSynthesizer, first_sound

pytestmark = pytest.mark.integration

CLAUSES = ["The capital of France is Paris.", "Hello there!", "Mount Everest is the tallest."]


def _audio(voice: PiperSynthesizer, text: str) -> np.ndarray:
    return np.concatenate(list(voice.synthesize(text)))


@pytest.mark.parametrize("text", CLAUSES)
def test_a_clause_starts_with_sound_not_pipers_lead_in(voice: PiperSynthesizer, text: str) -> None:
    untrimmed = PiperSynthesizer(voice.voice, voice.voice_id,
                                 dataclasses.replace(voice.options, trim_lead=False))
    raw, trimmed = _audio(untrimmed, text), _audio(voice, text)
    lead_in = first_sound(raw)
    assert lead_in is not None and lead_in > 2 * LEAD_KEPT  # Piper's own lead-in (30-65 ms)
    assert first_sound(trimmed) == LEAD_KEPT  # 5 ms kept before the first sound
    # Piper samples its durations, so two renderings differ a little; nothing but the
    # lead-in may go.
    assert abs((len(raw) - lead_in) - (len(trimmed) - LEAD_KEPT)) < 0.15 * len(raw)
