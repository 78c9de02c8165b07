"""How long intent recognition takes per utterance (docs/intents.md).

`python -m app.bench.intent_speed`: hassil's own samples of Home Assistant's sentences for
the intents apace uses, plus requests that match nothing (they cost the most: every
template is tried), each recognised three times; the median and p95 of the fastest of the
three (what the matcher costs), and of the first (what a busy machine adds).
"""

from __future__ import annotations

import logging
import random
import statistics
import time

from hassil import Intents
from hassil.sample import sample_intents

from models.intents import ha_sentences, load_recognizer
from pipeline.skills.base import normalise

MISSES = ["Tell me a joke about cats.", "What is the capital of France?", "What's 15% of 80?",
          "Set a pizza timer for 10 minutes.", "A ten minute timer.", "How much time is left?",
          "Remind me in 10 minutes to call my mom.", "Set an alarm for 615."]


def main(count: int = 400) -> None:
    logging.getLogger("hassil").setLevel(logging.ERROR)
    started = time.perf_counter()
    recognizer = load_recognizer()
    loaded_ms = (time.perf_counter() - started) * 1000
    sampled = [text for _, text in sample_intents(Intents.from_dict(ha_sentences()),
                                                  max_sentences_per_intent=60, language="en")]
    random.Random(0).shuffle(sampled)
    texts = [normalise(t) for t in sampled[:count] + MISSES * 5]
    first, best = [], []
    for text in texts:
        runs = []
        for _ in range(3):
            began = time.perf_counter()
            recognizer.recognise(text)
            runs.append((time.perf_counter() - began) * 1000)
        first.append(runs[0])
        best.append(min(runs))
    print(f"loaded in {loaded_ms:.0f} ms; {len(texts)} utterances")
    for name, times in (("fastest of 3", best), ("first try", first)):
        times.sort()
        print(f"{name}: median {statistics.median(times):.2f} ms, "
              f"p95 {times[int(0.95 * len(times))]:.2f} ms, max {times[-1]:.2f} ms")


if __name__ == "__main__":
    main()
