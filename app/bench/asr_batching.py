"""`python -m app.bench.asr_batching [ASR]`: would Whisper jobs due together be faster as
one batch? (`make bench-batching`; docs/scaling.md quotes it.)

2 and 3 spoken questions (the embedded voice) transcribed one after another and as one
encoder + decoder batch (`WhisperTranscriber.transcribe_many`), interleaved, 8 rounds:
the time until all are done (throughput), the mean time until each job's transcript is
ready (what a waiting conversation feels: in a batch every job waits for the last), and
whether the batch wrote the same words as one at a time.
"""

from __future__ import annotations

import statistics
import sys
import time

from app.bench.utterances import speak
from models.load import cpu_threads, load_synthesizer, load_transcriber
from models.locate import locate
from pipeline.answer.tts import TtsOptions
from pipeline.listen.asr import AsrOptions

QUESTIONS = ("What is the capital of Spain?", "Set a timer for ten minutes.",
             "How many legs does a spider have?")
ROUNDS = 8


def main(asr: str | None = None) -> None:
    found = locate("asr", asr)
    transcriber = load_transcriber(found.path, "cpu", "int8", cpu_threads(0), AsrOptions())
    voice = load_synthesizer(locate("tts", None).path, TtsOptions())
    clips = [speak(voice, q, lead_s=0.3, trail_s=0.5) for q in QUESTIONS]
    transcriber.transcribe(clips[0])  # warm
    for n in (2, 3):
        alone: list[tuple[float, float]] = []
        together: list[float] = []
        same = 0
        for _ in range(ROUNDS):
            started, ready, texts = time.perf_counter(), [], []
            for clip in clips[:n]:
                texts.append(transcriber.transcribe(clip))
                ready.append((time.perf_counter() - started) * 1000)
            alone.append((ready[-1], statistics.mean(ready)))
            started = time.perf_counter()
            batched = transcriber.transcribe_many(clips[:n])
            together.append((time.perf_counter() - started) * 1000)
            same += batched == texts
        all_done = statistics.median(a for a, _ in alone)
        mean_wait = statistics.median(m for _, m in alone)
        batch = statistics.median(together)
        print(f"{asr or 'whisper-tiny.en'}, {n} due together: one at a time all done {all_done:.0f} ms "
              f"(mean wait {mean_wait:.0f} ms); one batch {batch:.0f} ms (every job waits "
              f"for it): {batch / all_done:.2f}x the time, {batch / mean_wait:.2f}x the mean "
              f"wait; same words {same}/{ROUNDS}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
