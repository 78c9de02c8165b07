"""Spoken test questions made with the embedded Piper voice (for tests and `apace bench`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from pipeline.answer.tts import Synthesizer
from pipeline.events import SAMPLE_RATE, Pcm

QUESTIONS_FILE = Path(__file__).with_name("questions.txt")


def questions(path: Path = QUESTIONS_FILE) -> list[str]:
    """The shipped question set: one per line; '#' starts a comment."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def speak(
    synthesizer: Synthesizer, text: str, *, lead_s: float = 0.5, trail_s: float = 1.0,
    pause_at: str | None = None, pause_s: float = 0.0,
) -> Pcm:
    """`text` spoken, with silence before and after (and optionally a pause mid-way,
    after the words `pause_at`, as a person thinking mid-sentence)."""
    parts: list[Pcm] = [_silence(lead_s)]
    if pause_at and pause_at in text:
        head, tail = text.split(pause_at, 1)
        parts += [_say(synthesizer, head + pause_at), _silence(pause_s), _say(synthesizer, tail)]
    else:
        parts.append(_say(synthesizer, text))
    parts.append(_silence(trail_s))
    return np.concatenate(parts)


def _say(synthesizer: Synthesizer, text: str) -> Pcm:
    chunks: Iterable[Pcm] = synthesizer.synthesize(text)
    return np.concatenate(list(chunks))


def _silence(seconds: float) -> Pcm:
    return np.zeros(int(seconds * SAMPLE_RATE), np.int16)
