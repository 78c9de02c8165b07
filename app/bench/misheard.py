"""`apace bench --misheard`: does a request heard wrong in a noisy room still reach its skill?

In background talk or noise the recognizer keeps a request's shape but gets a word wrong
("convert 100 degrees Fahrenheit to solstice", "center timer for 10 minutes"); a skill that
declines sends the request to the LLM — slower, and often wrong. This bench speaks two sets
(Piper, and espeak-ng en-us where installed), mixes each clip into the room bench's
background talk (15 dB below the voice) and pink noise (10 dB SNR), and hears it clean and
in each room with the ear a noisy room gets (the noisy-room ear where one is installed;
noise suppressed as the gate does it in a noisy room), then routes the transcript through
the skills.

- the ASR set (app/bench/asr_set.txt, every line): the skills' tolerance of misheard words
  (pipeline/skills/soundalike.py and the loose patterns) was written from its noisy-room
  transcripts — *tuned*;
- the routing set (app/bench/routing_set.txt): written before any of it was heard, never
  used to choose a rule — *held out*.

Per condition and set, of the requests a skill answers as written: how many transcripts
reach that skill (and how many get the same reply), go to the LLM instead, or reach another
skill; and how many LLM requests a skill took. `--rounds` hears each clip in that many
stretches of each room.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from app.bench.asr import Clip, Line, asr_set, speak_set
from app.bench.room_sounds import Float, active_rms, babble, pink_noise, scaled
from pipeline.events import FRAME_SAMPLES, Pcm

ROUTING_SET = Path(__file__).with_name("routing_set.txt")
VOICES = ("piper x1", "espeak en-us")
ROOMS = (("clean", None, 0.0), ("babble15", "babble", 15.0), ("pink10", "pink", 10.0))
LEAD_S = 1.0
"""The room heard before each clip: what the suppressor and the ear get before the words."""

Route = Callable[[str], tuple[str | None, str | None]]
"""A transcript → (the skill that answers it, its reply), (None, None) for the LLM."""


@dataclass(frozen=True)
class Routed:
    """One clip heard in one room, and where its transcript went."""

    condition: str
    text: str
    voice: str
    held_out: bool
    heard: str
    want: str | None
    """The skill that answers the line as written (None: the LLM)."""
    got: str | None
    same_reply: bool


def routing_set(path: Path = ROUTING_SET) -> list[Line]:
    """The held-out routing lines (one per line, '#' comments)."""
    lines = (raw.split("#", 1)[0].strip() for raw in path.read_text().splitlines())
    return [Line(text, True) for text in lines if text]


def score(routed: Sequence[Routed]) -> dict[str, dict[str, int]]:
    """Counts per "condition/tuned" and "condition/held-out"."""
    tally: dict[str, Counter[str]] = {}
    for r in routed:
        counts = tally.setdefault(f"{r.condition}/{'held-out' if r.held_out else 'tuned'}", Counter())
        if r.want is None:
            counts["llm_requests"] += 1
            counts["llm_taken_by_skill"] += r.got is not None
            continue
        counts["skill_requests"] += 1
        if r.got == r.want:
            counts["reached_skill"] += 1
            counts["same_reply"] += r.same_reply
        else:
            counts["to_llm" if r.got is None else "other_skill"] += 1
    keys = ("skill_requests", "reached_skill", "same_reply", "to_llm", "other_skill",
            "llm_requests", "llm_taken_by_skill")
    return {name: {k: counts[k] for k in keys} for name, counts in sorted(tally.items())}


def report(scores: dict[str, dict[str, int]]) -> str:
    head = (f"{'condition/set':<20} {'reached':>12} {'same reply':>11} {'to LLM':>7} "
            f"{'other':>6} {'LLM taken':>10}")
    rows = [head]
    for name, c in scores.items():
        n = c["skill_requests"]
        rows.append(f"{name:<20} {c['reached_skill']:>5}/{n:<3} {_pct(c['reached_skill'], n):>4} "
                    f"{c['same_reply']:>11} {c['to_llm']:>7} {c['other_skill']:>6} "
                    f"{c['llm_taken_by_skill']:>5}/{c['llm_requests']}")
    return "\n".join(rows)


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def skills_route(data_dir: Path) -> Route:
    """The server's skills (timers, lists in a scratch store, then the stateless ones), fresh
    for every transcript so one request's list or timer does not answer the next."""
    from zoneinfo import ZoneInfo

    from app.runtime import stateless_skills
    from models.intents import load_recognizer
    from models.list_store import SqliteListStore
    from pipeline.skills import SkillContext, Timers, default_skills

    extra, _ = stateless_skills(str(data_dir / "unused"))
    now = datetime(2026, 11, 1, 8, 0, tzinfo=ZoneInfo("America/New_York"))

    def route(text: str) -> tuple[str | None, str | None]:
        with tempfile.TemporaryDirectory(dir=data_dir) as tmp:
            skills = default_skills(timers=Timers(), store=SqliteListStore(Path(tmp) / "lists.sqlite3"),
                                    extra=extra, recognizer=load_recognizer())
            reply = skills.answer(text, SkillContext(now=now, monotonic=0.0, owner="bench",
                                                     transcript=text))
        return (reply.skill, reply.text) if reply is not None else (None, None)

    return route


def in_room(pcm: Pcm, noise: Float | None, snr_db: float, offset: int,
            suppress: Callable[[Pcm], Pcm] | None) -> Pcm:
    """`pcm` (with LEAD_S of the room before it) mixed into `noise` at `snr_db` below its
    active level, noise-suppressed, the lead cut off again; unchanged when `noise` is None."""
    if noise is None:
        return pcm
    lead = int(LEAD_S * 16000)
    span = lead + len(pcm)
    start = offset % (len(noise) - span - 1)
    mixed = scaled(noise[start:start + span], active_rms(pcm), snr_db)
    mixed[lead:] += pcm.astype(np.float32) / 32768.0
    out: Pcm = np.clip(mixed * 32768.0, -32768, 32767).astype(np.int16)
    out = out[: len(out) // FRAME_SAMPLES * FRAME_SAMPLES]
    if suppress is not None:
        out = np.concatenate([suppress(out[i:i + FRAME_SAMPLES])
                              for i in range(0, len(out), FRAME_SAMPLES)])
    return out[lead:]


def hear_all(clips: Sequence[Clip], rounds: int, route: Route,
             transcribe: Callable[[Pcm], str], suppressor: Callable[[], Callable[[Pcm], Pcm]],
             rooms: dict[str, Float]) -> list[Routed]:
    """Every clip in every room (`rounds` stretches of each noisy one), heard and routed."""
    wanted = {clip.text: route(clip.text) for clip in clips}
    routed = []
    for condition, kind, snr in ROOMS:
        for round_ in range(rounds if kind else 1):
            for i, clip in enumerate(clips):
                offset = (i * 37 + round_ * 101) * 1000
                suppress = suppressor() if kind else None
                pcm = in_room(clip.pcm, rooms[kind] if kind else None, snr, offset, suppress)
                heard = transcribe(pcm)
                want, want_reply = wanted[clip.text]
                got, got_reply = route(heard)
                routed.append(Routed(condition, clip.text, clip.voice, clip.held_out, heard,
                                     want, got, got == want and got_reply == want_reply))
        print(f"  heard {condition}", flush=True)
    return routed


def bench_misheard(out: Path, *, rounds: int = 2, seed: int = 11) -> dict[str, Any]:
    """Run the bench; write misheard.json under `out` and print the table."""
    from models.choice import AUTO, locate_noisy_asr
    from models.denoise import WebrtcDenoiser
    from models.load import cpu_threads, load_synthesizer, load_transcriber
    from models.locate import locate
    from pipeline.answer.tts import TtsOptions
    from pipeline.listen.asr import AsrOptions
    from pipeline.room.conditioning import condition

    if rounds < 1:
        raise ValueError("--rounds must be at least 1")
    ear_model = locate_noisy_asr(AUTO, locate("asr")) or locate("asr")
    ear = load_transcriber(ear_model.path, "cpu", "int8", cpu_threads(0), AsrOptions())
    tts = locate("tts").path
    clips = [c for c in speak_set([*asr_set(), *routing_set()], tts) if c.voice in VOICES]
    # Every ASR-set line counts as tuned here, its held-out lines too (see the docstring).
    clips = [Clip(c.text, c.voice, c.pcm, c.text in _routing_texts()) for c in clips]
    rng = np.random.default_rng(seed)
    rooms = {"babble": babble(load_synthesizer(tts, TtsOptions(stream=False)), 120, rng),
             "pink": pink_noise(120 * 16000, rng)}

    def suppressor() -> Callable[[Pcm], Pcm]:
        denoiser = WebrtcDenoiser(suppression=2)

        def suppress(pcm: Pcm) -> Pcm:
            return condition(denoiser, pcm)

        return suppress

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        routed = hear_all(clips, rounds, skills_route(Path(tmp)), ear.transcribe, suppressor, rooms)
    scores = score(routed)
    result = {"ear": str(ear_model.path), "rounds": rounds, "scores": scores,
              "routed": [asdict(r) for r in routed]}
    (out / "misheard.json").write_text(json.dumps(result, indent=1))
    print(report(scores))
    print(f"wrote {out / 'misheard.json'}")
    return result


def _routing_texts() -> frozenset[str]:
    return frozenset(line.text for line in routing_set())
