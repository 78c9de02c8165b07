"""`python -m app.bench.batching [LLM]`: what batching buys the shared LLM on this box.

The same 60-token replies decoded by the shared engine (models/shared_llm.py) 1, 2 and 4
at once, and 3 one after another in a llama context of its own: tokens per second and
tokens per decode step. In-process, no audio: the LLM's own throughput (`make
bench-batching`; docs/scaling.md quotes it). Drafts are off, so every token is decoded.
"""

from __future__ import annotations

import sys
import threading
import time

from models.load import open_responder, open_shared
from models.locate import locate
from models.shared_llm import SharedLlama
from models.shared_responder import SeqResponder
from pipeline.answer.llm import LlmOptions

OPTIONS = LlmOptions(max_tokens=60, drafts=False)
QUESTIONS = ("Tell me about the history of Rome.", "Describe how a car engine works.",
             "Explain photosynthesis to a child.", "What is the story of Hamlet?")


def together(shared: SharedLlama, n: int) -> tuple[float, int, float]:
    """(seconds, tokens, tokens per step) for `n` replies decoded at once."""
    counts: list[int] = []

    def one(question: str) -> None:
        seq = SeqResponder(shared, "bench", OPTIONS)
        seq.warm([])
        "".join(seq.reply([], question))
        counts.append(seq.tokens_generated)
        seq.close()

    threads = [threading.Thread(target=one, args=(QUESTIONS[i],)) for i in range(n)]
    steps, tokens = shared.steps, shared.batched_tokens
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    return seconds, sum(counts), (shared.batched_tokens - tokens) / max(1, shared.steps - steps)


def main(llm: str | None = None) -> None:
    path = locate("llm", llm).path
    shared = open_shared(path, OPTIONS, sequences=5)
    try:
        for n in (1, 2, 4):
            for _ in range(2):
                seconds, tokens, per_step = together(shared, n)
                print(f"shared, {n} at once: {tokens / seconds:.1f} tokens/s "
                      f"({tokens} in {seconds:.2f} s, {per_step:.2f} tokens per step)", flush=True)
    finally:
        shared.close()
    own = open_responder(path, OPTIONS)
    try:
        own.warm([])
        for _ in range(2):
            started, before = time.perf_counter(), own.tokens_generated
            for question in QUESTIONS[:3]:
                "".join(own.reply([], question))
            tokens = own.tokens_generated - before
            print(f"own context, 3 one after another: "
                  f"{tokens / (time.perf_counter() - started):.1f} tokens/s", flush=True)
    finally:
        own.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
