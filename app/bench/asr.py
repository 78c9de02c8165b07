"""`apace bench --asr`: word error rate and ASR time per Whisper tier, vocabulary bias off/on.

The shipped spoken set (asr_set.txt) is spoken by the embedded Piper voice at three speeds
and, where `espeak-ng` is installed, by two of its voices; every clip is transcribed
in-process by the same windowed `WhisperTranscriber.transcribe` the server runs, with the
bias off, on (the vocabulary), and on with context (the vocabulary and, as the last
exchange, the clip's previous question: unrelated words, the usual case); the order
rotates per clip, so load on the box falls on all three alike. Held-out lines are scored
apart: the vocabulary was never chosen on them. A few no-speech clips (low noise,
silence) count phantom transcripts.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from models.wav_files import read_wav
from models.whisper import WhisperTranscriber
from pipeline.events import SAMPLE_RATE, Pcm
from pipeline.listen.asr import AsrOptions, Transcriber

SET_FILE = Path(__file__).with_name("asr_set.txt")
HELD_OUT_HEADER = "# held-out"
PIPER_SPEEDS = (0.85, 1.0, 1.15)
"""Piper length scales: 0.85 speaks faster than the voice's own rate, 1.15 slower."""
ESPEAK_VOICES = ("en-us", "en-gb")


@dataclass(frozen=True)
class Line:
    text: str
    held_out: bool


@dataclass(frozen=True)
class Clip:
    text: str
    """The reference transcript ("" for a no-speech clip)."""
    voice: str
    pcm: Pcm = field(repr=False, compare=False)
    held_out: bool = False


@dataclass
class Heard:
    text: str
    voice: str
    held_out: bool
    hypothesis: str
    wer: float
    ms: float
    decode_ms: float
    audio_s: float


@dataclass
class TierRun:
    """One tier with the bias off or on (with or without context), over every clip."""

    tier: str
    bias: bool
    context: bool = False
    heard: list[Heard] = field(default_factory=list)
    phantoms: list[str] = field(default_factory=list)
    """What it heard in the no-speech clips (all should be "")."""

    @property
    def name(self) -> str:
        return f"{self.tier} bias {'on' if self.bias else 'off'}{'+context' if self.context else ''}"

    def summary(self) -> dict[str, Any]:
        speech = self.heard
        held = [h for h in speech if h.held_out]
        ms = [h.ms for h in speech]
        out: dict[str, Any] = {
            "tier": self.tier, "bias": self.bias, "context": self.context,
            "utterances": len(speech),
            "wer": corpus_wer(speech), "wer_held_out": corpus_wer(held),
            "wer_tuned": corpus_wer([h for h in speech if not h.held_out]),
            "wer_by_voice": {v: corpus_wer([h for h in speech if h.voice == v])
                             for v in dict.fromkeys(h.voice for h in speech)},
            "sentences_ended": round(_share(speech, _ends_sentence), 3),
            "questions_marked": round(_share([h for h in speech if h.text.endswith("?")],
                                             lambda h: h.hypothesis.rstrip().endswith("?")), 3),
            "phantoms": sum(1 for p in self.phantoms if p),
        }
        if ms:
            p50, p95 = np.percentile(ms, [50, 95])
            dec50 = np.percentile([h.decode_ms for h in speech], 50)
            out |= {"asr_ms_p50": round(float(p50), 1), "asr_ms_p95": round(float(p95), 1),
                    "decode_ms_p50": round(float(dec50), 1),
                    "rtf": round(sum(ms) / 1000 / sum(h.audio_s for h in speech), 4)}
        return out


def asr_set(path: Path = SET_FILE) -> list[Line]:
    """The set: one utterance per line; lines after the `# held-out` header are held out."""
    lines: list[Line] = []
    held_out = False
    for raw in path.read_text().splitlines():
        if raw.strip().lower() == HELD_OUT_HEADER:
            held_out = True
        if text := raw.split("#", 1)[0].strip():
            lines.append(Line(text, held_out))
    return lines


# ---- voices -------------------------------------------------------------------------


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def speak_set(lines: Sequence[Line], tts_path: Path, *, espeak: bool = True) -> list[Clip]:
    """Every line in every voice: Piper at `PIPER_SPEEDS`, then espeak-ng voices if wanted
    and installed. Each clip has 0.3 s of silence either side, as the endpointer cuts it."""
    from app.bench.utterances import speak
    from models.load import load_synthesizer
    from pipeline.answer.tts import TtsOptions

    clips: list[Clip] = []
    for scale in PIPER_SPEEDS:
        voice = load_synthesizer(tts_path, TtsOptions(length_scale=scale))
        clips += [Clip(line.text, f"piper x{scale:g}",
                       speak(voice, line.text, lead_s=0.3, trail_s=0.3), line.held_out)
                  for line in lines]
    for name in ESPEAK_VOICES if espeak and espeak_available() else ():
        clips += [Clip(line.text, f"espeak {name}", _pad(espeak_pcm(line.text, name)),
                       line.held_out) for line in lines]
    return clips


def espeak_pcm(text: str, voice: str) -> Pcm:
    """`text` spoken by espeak-ng (22.05 kHz WAV on stdout) as 16 kHz int16."""
    wav = subprocess.run(["espeak-ng", "-v", voice, "--stdout", text], capture_output=True,
                         check=True, timeout=30).stdout
    return read_wav(wav)


def no_speech_clips(seed: int = 7) -> list[Clip]:
    """What must transcribe as "": 1 s of low white noise, 1 s of louder brown-ish noise
    (a fan), 1.5 s of digital silence."""
    rng = np.random.default_rng(seed)
    white = rng.normal(0, 100, SAMPLE_RATE)  # about -50 dBFS
    brown = np.cumsum(rng.normal(0, 1, SAMPLE_RATE))
    brown = (brown - brown.mean()) / (np.abs(brown).max() + 1e-9) * 1000  # about -30 dBFS peak
    silence = np.zeros(SAMPLE_RATE * 3 // 2)
    return [Clip("", name, pcm.astype(np.int16))
            for name, pcm in (("white noise", white), ("brown noise", brown), ("silence", silence))]


def _pad(pcm: Pcm, seconds: float = 0.3) -> Pcm:
    quiet = np.zeros(int(seconds * SAMPLE_RATE), np.int16)
    return np.concatenate([quiet, pcm, quiet])


# ---- scoring ------------------------------------------------------------------------

_SPOKEN_AS = [(re.compile(p), r) for p, r in (
    (r"%", " percent"), (r"°\s*f\b", " degrees fahrenheit"), (r"°\s*c\b", " degrees celsius"),
    (r"\ba (hundred|thousand)\b", r"one \1"), (r"(\d),(\d{3})\b", r"\1\2"),
    (r"(\d)[:.](\d\d)\b", r"\1 \2"), (r"\ba\.m\.", "am"), (r"\bp\.m\.", "pm"), (r"-", " "),
)]


def normalise(text: str) -> str:
    """Lower case, numbers as digits, %/°/times spelled one way, punctuation dropped: so that
    "15% of 80?" and "fifteen percent of eighty" score as the same words."""
    from text_to_num import alpha2digit

    text = text.lower()
    for pattern, spoken in _SPOKEN_AS:
        text = pattern.sub(spoken, text)
    text = alpha2digit(text, "en", threshold=0)
    text = re.sub(r"[^\w\s']", " ", text)
    text = re.sub(r"\b(\d{1,2}) (\d\d)\b", r"\1\2", text)  # a time: "6 30", "6:30", "630"
    return " ".join(text.split())


def corpus_wer(heard: Sequence[Heard]) -> float | None:
    """Word errors over reference words, pooled over `heard` (None for no utterances)."""
    import jiwer

    if not heard:
        return None
    pairs = [(normalise(h.text), normalise(h.hypothesis)) for h in heard]
    references = [r for r, _ in pairs]
    hypotheses = [h for _, h in pairs]
    return round(float(jiwer.wer(references, hypotheses)), 4)


def clip_wer(reference: str, hypothesis: str) -> float:
    import jiwer

    return float(jiwer.wer(normalise(reference), normalise(hypothesis)))


def _ends_sentence(heard: Heard) -> bool:
    return heard.hypothesis.rstrip().endswith((".", "?", "!"))


def _share(heard: Sequence[Heard], test: Any) -> float:
    return sum(1 for h in heard if test(h)) / len(heard) if heard else 0.0


# ---- running ------------------------------------------------------------------------


def run_tier(tier: str, path: Path, clips: Sequence[Clip], silent: Sequence[Clip], *,
             threads: int = 0) -> tuple[TierRun, ...]:
    """One Whisper model: bias off, on, on with context (transcribers share the model)."""
    from models.load import cpu_threads, load_transcriber

    off = load_transcriber(path, "cpu", "int8", cpu_threads(threads), AsrOptions(bias=False))
    on = WhisperTranscriber(off.model, AsrOptions(bias=True))
    pair = (off, on, WhisperTranscriber(off.model, AsrOptions(bias=True, use_context=True)))
    runs = (TierRun(tier, bias=False), TierRun(tier, bias=True),
            TierRun(tier, bias=True, context=True))
    for transcriber in pair:  # warm: the first call allocates
        transcriber.transcribe(clips[0].pcm)
    for i, clip in enumerate(clips):
        context = clips[i - 1].text if i and clips[i - 1].voice == clip.voice else ""
        for k in (i % 3, (i + 1) % 3, (i + 2) % 3):
            runs[k].heard.append(hear(pair[k], clip, context if runs[k].context else ""))
    for clip in silent:
        for k, run in enumerate(runs):
            run.phantoms.append(pair[k].transcribe(clip.pcm, "Set a timer for ten minutes."
                                                   if run.context else ""))
    return runs


def hear(transcriber: Transcriber, clip: Clip, context: str = "") -> Heard:
    """One timed transcription of one clip, scored."""
    start = time.perf_counter()
    hypothesis = transcriber.transcribe(clip.pcm, context)
    ms = (time.perf_counter() - start) * 1000
    timing = getattr(transcriber, "last_timing", None)
    return Heard(clip.text, clip.voice, clip.held_out, hypothesis, round(clip_wer(clip.text, hypothesis), 3),
                 round(ms, 1), round(timing.decode_ms, 1) if timing else float("nan"),
                 len(clip.pcm) / SAMPLE_RATE)


def default_tiers() -> dict[str, Path]:
    """Every Whisper tier on this box: tiny.en (embedded) and those `apace models pull` got."""
    from models.catalog import TIERS
    from models.locate import ModelError, tier_path

    tiers: dict[str, Path] = {}
    for tier in TIERS.values():
        if tier.kind == "asr":
            try:
                tiers[tier.name] = tier_path(tier)
            except ModelError:
                continue
    return tiers


def parse_tiers(spec: str) -> dict[str, Path]:
    """`NAME=DIR,...` (CTranslate2 Whisper folders) or tier names (`whisper-base`) → {name: DIR}."""
    from models.catalog import TIERS
    from models.locate import tier_path

    tiers: dict[str, Path] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, path = (part.strip() for part in item.partition("="))
        if not sep and TIERS.get(name) and TIERS[name].kind == "asr":
            tiers[name] = tier_path(TIERS[name])  # a ModelError says how to pull it
            continue
        if not sep or not name or not path:
            raise ValueError(f"--asr-tiers wants NAME=DIR or an ASR tier name, not {item!r}")
        folder = Path(path).expanduser()
        if not (folder / "model.bin").is_file():
            raise ValueError(f"--asr-tiers: {folder} is not a CTranslate2 Whisper folder"
                             " (no model.bin)")
        tiers[name] = folder
    if not tiers:
        raise ValueError("--asr-tiers names no tier")
    return tiers


def bench_asr(out: Path, *, tiers: dict[str, Path] | None = None,
              lines: Sequence[Line] | None = None, espeak: bool = True,
              threads: int = 0) -> list[TierRun]:
    """Speak the set, run every tier with the bias off and on; write asr.json and asr.png
    under `out` and print the table."""
    from models.locate import locate

    tiers = tiers or default_tiers()
    lines = list(lines) if lines is not None else asr_set()
    clips = speak_set(lines, locate("tts").path, espeak=espeak)
    runs = [run for tier, path in tiers.items()
            for run in run_tier(tier, path, clips, no_speech_clips(), threads=threads)]
    out.mkdir(parents=True, exist_ok=True)
    (out / "asr.json").write_text(json.dumps(to_json(runs, tiers), indent=1))
    plot(runs, out / "asr.png")
    print(report(runs))
    print(f"wrote {out / 'asr.json'} and {out / 'asr.png'}")
    return runs


# ---- reporting ----------------------------------------------------------------------


def to_json(runs: Sequence[TierRun], tiers: dict[str, Path]) -> dict[str, Any]:
    return {
        "tiers": {name: str(path) for name, path in tiers.items()},
        "vocabulary": AsrOptions().vocabulary,
        "runs": [run.summary() for run in runs],
        "misheard": {run.name: [asdict(h) for h in run.heard if h.wer > 0] for run in runs},
        "phantoms": {run.name: run.phantoms for run in runs},
    }


def report(runs: Sequence[TierRun]) -> str:
    """The printed table: one row per tier and bias, then WER per voice."""
    rows = [run.summary() for run in runs]
    voices = list(dict.fromkeys(v for row in rows for v in row["wer_by_voice"]))
    width = max([len(run.name) for run in runs] + [6])
    head = (f"{'config':<{width}}  WER all  held-out  tuned  ASR ms p50    p95  decode p50"
            "    RTF  ended .?!  kept ?  phantoms")
    lines = [f"ASR: {rows[0]['utterances'] if rows else 0} clips per config "
             f"({len(voices)} voices); WER after normalising numbers and punctuation", head]
    for run, row in zip(runs, rows, strict=True):
        lines.append(
            f"{run.name:<{width}}  {_pct(row['wer']):>7}  {_pct(row['wer_held_out']):>8}  "
            f"{_pct(row['wer_tuned']):>5}  {row.get('asr_ms_p50', 0):>10.0f}  "
            f"{row.get('asr_ms_p95', 0):>5.0f}  {row.get('decode_ms_p50', 0):>10.0f}  "
            f"{row.get('rtf', 0):>5.3f}  {row['sentences_ended']:>9.0%}  "
            f"{row['questions_marked']:>6.0%}  {row['phantoms']:>8}")
    lines += ["", f"{'WER by voice':<{width}}  " + "  ".join(f"{v:>12}" for v in voices)]
    for run, row in zip(runs, rows, strict=True):
        lines.append(f"{run.name:<{width}}  " + "  ".join(
            f"{_pct(row['wer_by_voice'].get(v)):>12}" for v in voices))
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def plot(runs: Sequence[TierRun], path: Path) -> None:
    """WER per voice and ASR time per config, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [run.summary() for run in runs]
    voices = list(dict.fromkeys(v for row in rows for v in row["wer_by_voice"]))
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 4.5), width_ratios=(2.6, 1))
    bar = 0.8 / max(1, len(runs))
    for i, (run, row) in enumerate(zip(runs, rows, strict=True)):
        xs = np.arange(len(voices) + 2) + i * bar
        values = [row["wer_by_voice"].get(v) or 0 for v in voices]
        values += [row["wer_held_out"] or 0, row["wer"] or 0]
        left.bar(xs, [100 * v for v in values], bar, label=run.name)
        p50, p95 = row.get("asr_ms_p50", 0), row.get("asr_ms_p95", 0)
        right.barh(i, p50, xerr=[[0], [p95 - p50]], color=f"C{i}")
    left.set_xticks(np.arange(len(voices) + 2) + 0.4 - bar / 2, [*voices, "held-out", "all"],
                    rotation=20)
    left.set_ylabel("WER %")
    left.legend(fontsize=8)
    right.set_yticks(range(len(runs)), [r.name for r in runs], fontsize=8)
    right.invert_yaxis()
    right.set_xlabel("ASR ms per utterance (p50, line to p95)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
