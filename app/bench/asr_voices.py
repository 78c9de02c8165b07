"""Whisper's word error rate on other voices, per tier and beam width.

`python -m app.bench.asr_voices whisper-tiny.en:1 whisper-tiny.en:3 whisper-base:3`: the
shipped questions and the tuned and held-out conversations' turns (never the blind split),
spoken in turn by the embedded Piper voice and three espeak-ng voices, transcribed with the
product's Whisper settings (vocabulary bias on; `:nobias` after the beam turns it off).
Prints WER, turns heard word for word (numerals count as words: "twelve" heard "12" is a
miss), per-voice counts and ASR time. `SHOW=1` prints every miss. Figures: docs/quality.md.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import time
from collections.abc import Sequence

import numpy as np

from app.bench.turn_audio import complete_texts, cut_at_speech_end
from app.bench.voices import HELD_OUT_VOICES, PIPER, espeak_speech
from pipeline.events import SAMPLE_RATE, Pcm

VOICES = (PIPER, HELD_OUT_VOICES[0], HELD_OUT_VOICES[2], HELD_OUT_VOICES[3])


def clips() -> list[tuple[str, str, Pcm]]:
    """(text, voice, audio): each text spoken by the next voice in turn."""
    from app.bench.utterances import speak
    from models.load import load_synthesizer
    from models.locate import locate
    from pipeline.answer.tts import TtsOptions

    piper = load_synthesizer(locate("tts").path, TtsOptions())
    lead = np.zeros(int(0.3 * SAMPLE_RATE), np.int16)
    out = []
    for i, text in enumerate(complete_texts()):
        voice = VOICES[i % len(VOICES)]
        pcm = (speak(piper, text, lead_s=0.3, trail_s=0.0) if voice.espeak is None
               else espeak_speech(text, voice))
        out.append((text, voice.name, np.concatenate([lead, cut_at_speech_end(pcm, 0.3)])))
    return out


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9 ]", "", text.lower().replace("-", " ")).split()


def edits(said: Sequence[str], heard: Sequence[str]) -> int:
    """Word-level edit distance."""
    row = list(range(len(heard) + 1))
    for i, word in enumerate(said, 1):
        prev, row[0] = row[0], i
        for j, other in enumerate(heard, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (word != other))
    return row[-1]


def measure(spec: str, spoken: list[tuple[str, str, Pcm]]) -> str:
    from models.load import load_transcriber
    from models.locate import locate
    from pipeline.listen.asr import AsrOptions

    tier, beam, *rest = spec.split(":")
    path = locate("asr", tier).path
    options = AsrOptions(beam_size=int(beam), bias="nobias" not in rest)
    transcriber = load_transcriber(path, "cpu", "int8", 2, options)
    transcriber.transcribe(spoken[0][2])  # warm
    errors = total = exact = 0
    times: list[float] = []
    per_voice: dict[str, list[int]] = {}
    for text, voice, pcm in spoken:
        start = time.perf_counter()
        heard = transcriber.transcribe(pcm)
        times.append((time.perf_counter() - start) * 1000)
        missed = edits(words(text), words(heard))
        errors, total, exact = errors + missed, total + len(words(text)), exact + (missed == 0)
        counts = per_voice.setdefault(voice, [0, 0])
        counts[0] += missed == 0
        counts[1] += 1
        if missed and os.environ.get("SHOW"):
            print(f"    [{voice}] {text} → {heard}")
    voices = ", ".join(f"{v} {a}/{b}" for v, (a, b) in per_voice.items())
    return (f"{spec}: WER {100 * errors / total:.1f} %, word for word {exact}/{len(spoken)}, "
            f"ms p50 {statistics.median(times):.0f} p90 {np.percentile(times, 90):.0f} ({voices})")


def main(argv: Sequence[str] | None = None) -> None:
    specs = list(argv if argv is not None else sys.argv[1:]) or ["whisper-tiny.en:1",
                                                                  "whisper-tiny.en:3"]
    spoken = clips()
    for spec in specs:
        print(measure(spec, spoken), flush=True)


if __name__ == "__main__":
    main()
