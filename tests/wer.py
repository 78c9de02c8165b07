"""Word error rate as the tests score a transcript: case and punctuation do not count."""

from __future__ import annotations

import jiwer


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate after lower-casing and dropping punctuation."""
    norm = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(),
                          jiwer.RemoveMultipleSpaces(), jiwer.Strip(), jiwer.ReduceToListOfListOfWords()])
    return float(jiwer.wer(reference, hypothesis, reference_transform=norm, hypothesis_transform=norm))
