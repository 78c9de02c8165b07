"""Does an audio end-of-turn model tell a finished question from a thinking pause?

`python -m app.bench.turn_audio --model smart-turn-v3.2-cpu.onnx`: smart-turn v3.2's
P(complete) on the shipped questions and the tuned and held-out conversations' user lines
(spoken by the embedded Piper voice and by two espeak-ng voices), and on the paused
questions of `apace bench` up to their pause word (what must not end a turn), spoken alone
and cut from the whole question at a comma's pause; each clip ends where its speech does
plus `TAIL_S` of silence, as the server has it at a silence onset. Prints the share judged
complete per threshold, the inference time with 1 and 2 threads and how many turns would
end after `complete_ms` with the text detector alone and with the audio verdict added.
Figures: docs/turn_audio.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.bench.latency import HELD_OUT, PAUSED
from app.bench.voices import HELD_OUT_VOICES, PIPER, Voice, espeak_available, espeak_speech
from pipeline.audio import speech_end_sample
from pipeline.events import SAMPLE_RATE, Pcm

TAIL_S = 0.15
"""Silence kept after the last loud sample: where the VAD has heard the silence begin."""
_LOUD = 300
THRESHOLDS = (0.3, 0.5, 0.7, 0.9)
ESPEAK_VOICES = (HELD_OUT_VOICES[0], HELD_OUT_VOICES[3])  # en-us, en+f3


COMPLETE, ALONE, MID_SENTENCE = "complete", "fragment (spoken alone)", "fragment (mid-sentence)"
"""A fragment spoken alone ends the way a TTS voice ends a sentence (as `apace bench`'s
paused questions do: their head is synthesised on its own); one cut from the whole
question at a comma's pause ("set a timer for, ten minutes") keeps the sentence's
unfinished intonation, nearer to a person pausing to think."""
_MIN_GAP_S = 0.06


@dataclass(frozen=True, kw_only=True)
class Clip:
    text: str
    voice: str
    kind: str
    pcm: Pcm

    @property
    def complete(self) -> bool:
        return self.kind == COMPLETE


def cut_at_speech_end(pcm: Pcm, tail_s: float = TAIL_S) -> Pcm:
    """`pcm` up to its last loud sample plus `tail_s` of silence."""
    return np.concatenate([pcm[:speech_end_sample(pcm)], np.zeros(int(tail_s * SAMPLE_RATE), np.int16)])


def complete_texts() -> list[str]:
    """The shipped questions and the tuned and held-out conversations' turns (never the
    blind split: nobody may read it)."""
    from app.bench.conversations import SPLITS, conversation_set
    from app.bench.utterances import questions

    files = [(path, split) for path, split in SPLITS if split != "blind"]
    turns = [t.say for c in conversation_set(files=files) for t in c.turns]
    return list(dict.fromkeys(questions() + turns))


def fragment_texts() -> list[str]:
    """The paused questions up to and including the word the speaker pauses after."""
    return [head for head, _ in paused_texts()]


def cut_at_pause(whole: Pcm, head_end: int, tail_s: float = TAIL_S) -> Pcm:
    """`whole` cut where its quiet stretch nearest to `head_end` (the sample where the
    words before the pause end when spoken alone) begins, plus `tail_s` of silence."""
    quiet = np.abs(whole.astype(np.int32)) <= _LOUD
    edges = np.flatnonzero(np.diff(np.concatenate([[0], quiet.astype(np.int8), [0]])))
    runs = [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)
            if b - a >= _MIN_GAP_S * SAMPLE_RATE and a > 0]
    start = min(runs, key=lambda r: abs(r[0] - head_end))[0] if runs else head_end
    return np.concatenate([whole[:start], np.zeros(int(tail_s * SAMPLE_RATE), np.int16)])


def paused_texts() -> list[tuple[str, str]]:
    """(fragment, the whole question with a comma at the pause) for each paused question."""
    return [(q.split(f" {w} ", 1)[0] + f" {w}", q.replace(f" {w} ", f" {w}, ", 1))
            for q, w in PAUSED + HELD_OUT]


def make_clips(voices: Sequence[Voice], tail_s: float = TAIL_S) -> list[Clip]:
    from app.bench.utterances import speak
    from models.load import load_synthesizer
    from models.locate import locate
    from pipeline.answer.tts import TtsOptions

    piper = load_synthesizer(locate("tts").path, TtsOptions())
    clips = []
    for voice in voices:
        def say(text: str, voice: Voice = voice) -> Pcm:
            if voice.espeak is None:
                return speak(piper, text, lead_s=0.3, trail_s=0.0)
            return espeak_speech(text, voice)
        clips += [Clip(text=t, voice=voice.name, kind=COMPLETE,
                       pcm=cut_at_speech_end(say(t), tail_s)) for t in complete_texts()]
        for head, whole in paused_texts():
            alone = say(head)
            clips.append(Clip(text=head, voice=voice.name, kind=ALONE,
                              pcm=cut_at_speech_end(alone, tail_s)))
            clips.append(Clip(text=head, voice=voice.name, kind=MID_SENTENCE,
                              pcm=cut_at_pause(say(whole), speech_end_sample(alone), tail_s)))
    return clips


def scored(clips: Sequence[Clip], model: Callable[[np.ndarray], float]
           ) -> tuple[list[float], list[float]]:
    """Each clip's P(complete) and the ms it took."""
    probs, ms = [], []
    for clip in clips:
        start = time.perf_counter()
        probs.append(model(clip.pcm.astype(np.float32) / 32768.0))
        ms.append((time.perf_counter() - start) * 1000)
    return probs, ms


def _share(values: Sequence[float], threshold: float) -> str:
    above = sum(v >= threshold for v in values)
    return f"{above}/{len(values)} ({100 * above / max(1, len(values)):.0f} %)"


def report(clips: Sequence[Clip], probs: Sequence[float]) -> None:
    voices = list(dict.fromkeys(c.voice for c in clips))
    for voice in [*voices, "all"]:
        pick = [(c, p) for c, p in zip(clips, probs, strict=True) if voice in ("all", c.voice)]
        done = [p for c, p in pick if c.complete]
        alone = [p for c, p in pick if c.kind == ALONE]
        mid = [p for c, p in pick if c.kind == MID_SENTENCE]
        print(f"\n{voice}: share judged complete (P ≥ threshold) of {len(done)} complete "
              f"questions | {len(alone)} fragments spoken alone | cut mid-sentence")
        for t in THRESHOLDS:
            print(f"  P ≥ {t}: {_share(done, t):<16} | {_share(alone, t):<14} | "
                  f"{_share(mid, t)}")
    for kind in (ALONE, MID_SENTENCE):
        print(f"\n{kind}, P per voice ({', '.join(voices)}):")
        for text in fragment_texts():
            ps = [f"{p:.2f}" for c, p in zip(clips, probs, strict=True)
                  if c.text == text and c.kind == kind]
            print(f"  {text:<30} {' '.join(ps)}")
    print("\ncomplete clips with P < 0.5:")
    for c, p in zip(clips, probs, strict=True):
        if c.complete and p < 0.5:
            print(f"  {p:.2f} [{c.voice}] {c.text}")


def text_verdicts(texts: Sequence[str]) -> list[float]:
    from models.load import open_turn_detector
    from models.locate import locate

    detector = open_turn_detector(locate("turn").path, 2)
    try:
        return [detector.done_logprob(t) for t in texts]
    finally:
        detector.close()


def combined(clips: Sequence[Clip], probs: Sequence[float]) -> None:
    """How many turns end after `complete_ms` with the text detector alone (as today) and
    with the audio verdict added as a rule would add it (P ≥ threshold ends a turn whose
    last word does not trail off). Fragments are scored as Whisper often writes them,
    closed by a period ("Set a timer for."): the hard case for the text rule."""
    from pipeline.listen.endpointing import EndpointOptions, endpoint_silence_ms, trails_off

    options = EndpointOptions()
    texts = list(dict.fromkeys(_heard(c) for c in clips))
    verdicts = dict(zip(texts, text_verdicts(texts), strict=True))

    def ends(clip: Clip, p: float | None) -> bool:
        text = _heard(clip)
        if p is not None and not trails_off(text):
            return True
        return endpoint_silence_ms(text, 600, options,
                                   done_logprob=verdicts[text]) == options.complete_ms

    print("\nending after complete_ms: text detector alone → with audio P ≥ threshold")
    for t in THRESHOLDS:
        for label, kinds in (("complete", (COMPLETE,)), ("fragments", (ALONE, MID_SENTENCE))):
            chosen = [(c, p) for c, p in zip(clips, probs, strict=True) if c.kind in kinds]
            before = sum(ends(c, None) for c, _ in chosen)
            after = [c for c, p in chosen if ends(c, p if p >= t else None)]
            cut = sorted({c.text for c in after if not c.complete})
            print(f"  {t}: {label:<9} {before}/{len(chosen)} → {len(after)}/{len(chosen)}"
                  + (f"  ({'; '.join(cut)})" if cut else ""))


def _heard(clip: Clip) -> str:
    return clip.text if clip.complete else clip.text + "."


def main(argv: Sequence[str] | None = None) -> None:
    from models.smart_turn import SmartTurn, SmartTurnOptions
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="smart-turn v3 ONNX file")
    parser.add_argument("--no-text", action="store_true", help="skip the text detector")
    parser.add_argument("--tail-s", type=float, default=TAIL_S,
                        help=f"silence kept after the speech (default {TAIL_S})")
    args = parser.parse_args(argv)
    voices = [PIPER, *(ESPEAK_VOICES if espeak_available() else ())]
    clips = make_clips(voices, args.tail_s)
    timings: dict[int, list[float]] = {}
    probs: list[float] = []
    for threads in (1, 2):
        model = SmartTurn(args.model, SmartTurnOptions(threads=threads))
        model.complete_probability(clips[0].pcm.astype(np.float32) / 32768.0)  # warm up
        probs, timings[threads] = scored(clips, model.complete_probability)
    report(clips, probs)
    for threads, ms in timings.items():
        q = statistics.quantiles(ms, n=20)
        print(f"\ninference, {threads} thread(s): median {statistics.median(ms):.1f} ms, "
              f"p95 {q[18]:.1f} ms ({len(ms)} clips)")
    if not args.no_text:
        combined(clips, probs)

if __name__ == "__main__":
    main()
