"""Does the text turn detector tell a finished question from a thinking pause?

`python -m app.bench.turn_text`: each formulation of the detector (models/turn_detector.py,
`TurnPrompt`) scores the finished turns and the fragments of two splits, and the bench
prints how many of each reach the fast threshold (the turn ends after `complete_ms`: a
fragment there is a user cut off at their pause), the thresholds each formulation would
need to let through no more fragments than the plain one does today, and the time per
check. Thresholds are chosen on the tuned split and counted on the held-out split.
Figures: docs/turn_detector.md.

- Finished: the shipped questions and the conversations' user turns (never the blind
  split: nobody may read it), as written.
- Fragments: each finished turn without its last 1-3 words (as Whisper writes a turn
  heard up to a pause: closed by the whole turn's own stop), less the cuts that are whole
  requests themselves (`WHOLE`); the paused questions of `apace bench` up to their pause;
  and fragments Whisper was seen to write at a pause (`HEARD`).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from app.bench.latency import HELD_OUT, PAUSED
from models.turn_detector import EXAMPLES, PLAIN, PLAIN_THRESHOLDS, TurnPrompt

CUTS = (1, 2, 3)
"""How many last words a fragment lacks."""
WHOLE = frozenset("""What is one hundred|How are you|Thank you|Set a timer|Cancel the pasta
|What day is it|Describe the ocean|What language do they speak|Set a timer for two minutes
|Set a timer for three minutes|Can you order a pizza|Start an eight minute timer|What's the weather
|What's the time|What's the time difference|Tell me everything|Read me today's news
|How many items are on my list|Convert five miles|Can you tell me a fun fact|Call my mother
|What is Apple's stock price|What is Apple's stock|What is the boiling point|Thanks a lot
|Could you wake me up|What is one hundred Fahrenheit|How much time is left on my tea
|At what temperature does water boil|What's on my calendar|And what is that
|What is the tallest mountain|Take bread off""".replace("\n", "").split("|"))
"""Cuts that are whole requests or questions themselves: a turn may end there."""
HEARD = ("What is the capital?", "How far is the men?", "Play some music, bye.",
         "What is the weather light?", "Set a timer for it.")
"""Fragments as Whisper wrote them at a thinking pause (tuned split)."""
FORMULATIONS: dict[str, TurnPrompt] = {
    "plain (before)": PLAIN,
    "stops": TurnPrompt(stop_weight=1.0),
    "half stops (default)": TurnPrompt(stop_weight=0.5),
    "examples": TurnPrompt(examples=EXAMPLES, stop_weight=0.0),
    "examples + stops": TurnPrompt(examples=EXAMPLES, stop_weight=1.0),
    "examples + half stops": TurnPrompt(examples=EXAMPLES, stop_weight=0.5),
}
PLAIN_DONE, PLAIN_UNFINISHED = PLAIN_THRESHOLDS


@dataclass(frozen=True, kw_only=True)
class Split:
    name: str
    finished: list[str]
    fragments: list[str]


def fragments_of(finished: Sequence[str]) -> list[str]:
    """Each turn cut before its last 1-3 words, closed by the turn's own stop."""
    cuts: dict[str, str] = {}
    for text in finished:
        stop = text[-1] if text[-1] in ".?!" else ""
        words = text.rstrip(".?!").split()
        for n in CUTS:
            head = " ".join(words[:-n]).rstrip(",")
            if len(words) - n >= 2 and head not in WHOLE:
                cuts.setdefault(head, head + stop)
    return list(cuts.values())


def paused_heads(paused: Sequence[tuple[str, str]]) -> list[str]:
    """The paused questions up to their pause word, closed by the question's own stop."""
    return [q.split(f" {w} ", 1)[0] + f" {w}" + q[-1] for q, w in paused]


def splits() -> list[Split]:
    from app.bench.conversations import CONVERSATIONS, conversation_set
    from app.bench.conversations import HELD_OUT as HELD_OUT_FILE
    from app.bench.utterances import questions

    def turns(path: Path) -> list[str]:
        return [t.say for c in conversation_set(files=[(path, "tuned")]) for t in c.turns]

    tuned = list(dict.fromkeys(questions() + turns(CONVERSATIONS)))
    held = [t for t in dict.fromkeys(turns(HELD_OUT_FILE)) if t not in tuned]
    return [
        Split(name="tuned", finished=tuned,
              fragments=list(dict.fromkeys(fragments_of(tuned) + paused_heads(PAUSED)
                                           + list(HEARD)))),
        Split(name="held-out", finished=held,
              fragments=list(dict.fromkeys(fragments_of(held) + paused_heads(HELD_OUT)))),
    ]


@dataclass(frozen=True, kw_only=True)
class Scored:
    finished: list[float]
    fragments: list[float]


def score(prompt: TurnPrompt, texts: Sequence[str], threads: int,
          model: str | None = None) -> tuple[list[float], float]:
    """Each text's verdict and the median ms a check took; `model`: a ChatML GGUF's path
    or an LLM tier's name instead of the turn detector's own model."""
    from models.load import open_turn_detector
    from models.locate import locate

    path = locate("turn").path if model is None else (
        Path(model) if model.endswith(".gguf") else locate("llm", model).path)
    detector = open_turn_detector(path, threads, prompt)
    try:
        verdicts, ms = [], []
        for text in texts:
            start = time.perf_counter()
            verdicts.append(detector.done_logprob(text))
            ms.append((time.perf_counter() - start) * 1000)
        return verdicts, statistics.median(ms)
    finally:
        detector.close()


def fast_threshold(fragments: Sequence[float], let_through: int) -> float:
    """The lowest threshold (to 0.1) that no more than `let_through` fragments reach."""
    above = sorted(fragments, reverse=True)
    if let_through >= len(above):
        return -99.0
    return round(math.floor(above[let_through] * 10 + 1e-9) / 10 + 0.1, 1)


def unfinished_threshold(finished: Sequence[float], held_back: int) -> float:
    """The highest threshold (to 0.1) at or under which no more than `held_back` finished
    turns score (they would wait the trailing silence, not the statement one)."""
    below = sorted(finished)
    if held_back >= len(below):
        return 0.0
    return round(math.ceil(below[held_back] * 10 - 1e-9) / 10 - 0.1, 1)


def _count(values: Sequence[float], threshold: float) -> int:
    return sum(v >= threshold for v in values)


@dataclass(frozen=True, kw_only=True)
class Budget:
    """What the plain formulation at its thresholds does on the tuned split."""

    fragments: int
    """Fragments that reach the fast threshold."""
    held_back: int
    """Finished turns at or under the unfinished threshold."""


def row(name: str, split_scores: Sequence[Scored], ms: float, done: float,
        unfinished: float) -> str:
    cells = [f"{name:<22}", f"{done:6.1f} {unfinished:6.1f}", f"{ms:5.1f}"]
    for s in split_scores:
        held_back = len(s.finished) - _count(s.finished, unfinished + 1e-9)
        cells.append(f"{_count(s.finished, done):3}/{len(s.finished):<3} "
                     f"{_count(s.fragments, done):3}/{len(s.fragments):<3} {held_back:2}")
    return " | ".join(cells)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", help="score with this ChatML GGUF (a path, or an LLM "
                        "tier such as qwen2.5-coder-0.5b) instead of the turn detector's model")
    parser.add_argument("--show", type=int, default=8,
                        help="list the N lowest finished and highest fragments per formulation")
    parser.add_argument("--only", default="",
                        help="comma-separated formulations to score besides the plain one"
                        f" ({', '.join(FORMULATIONS)})")
    args = parser.parse_args(argv)
    wanted = {n.strip() for n in args.only.split(",") if n.strip()}
    if unknown := wanted - set(FORMULATIONS):
        parser.error(f"no formulation {', '.join(sorted(unknown))}")
    data = splits()
    texts = list(dict.fromkeys(t for s in data for t in s.finished + s.fragments))
    print("finished | fragments:", ", ".join(
        f"{s.name} {len(s.finished)} | {len(s.fragments)}" for s in data))
    print(f"{'formulation':<22} | {'done  unfin':<13} | ms/check | "
          + " | ".join(f"{s.name}: fast finished, fast fragments, finished ≤ unfin"
                       for s in data))
    budget: Budget | None = None
    for name, prompt in FORMULATIONS.items():
        if wanted and prompt != PLAIN and name not in wanted:
            continue
        verdicts, ms = score(prompt, texts, args.threads, args.model)
        by_text = dict(zip(texts, verdicts, strict=True))
        scored = [Scored(finished=[by_text[t] for t in s.finished],
                         fragments=[by_text[t] for t in s.fragments]) for s in data]
        if budget is None:  # the plain formulation comes first: the others must match it
            tuned = scored[0]
            budget = Budget(fragments=_count(tuned.fragments, PLAIN_DONE),
                            held_back=len(tuned.finished) - _count(tuned.finished,
                                                                   PLAIN_UNFINISHED + 1e-9))
            print(row(f"{name} at {PLAIN_DONE:g}/{PLAIN_UNFINISHED:g}", scored, ms,
                      PLAIN_DONE, PLAIN_UNFINISHED))
        done = fast_threshold(scored[0].fragments, budget.fragments)
        unfinished = min(done, unfinished_threshold(scored[0].finished, budget.held_back))
        print(row(name, scored, ms, done, unfinished))
        _show(data, scored, args.show)


def _show(data: Sequence[Split], scored: Sequence[Scored], n: int) -> None:
    if n <= 0:
        return
    for split, s in zip(data, scored, strict=True):
        low = sorted(zip(s.finished, split.finished, strict=True))[:n]
        high = sorted(zip(s.fragments, split.fragments, strict=True), reverse=True)[:n]
        print(f"    {split.name} lowest finished: "
              + "; ".join(f"{v:.1f} {t}" for v, t in low))
        print(f"    {split.name} highest fragments: "
              + "; ".join(f"{v:.1f} {t}" for v, t in high))


if __name__ == "__main__":
    main()
