"""`apace bench`: time to first audio as a user hears it, over real WebRTC.

A real aiortc client plays spoken questions at real-time pace into `apace serve` — one
connection, several turns, so KV reuse counts — and measures TTFA on its own clock: from
the end of speech in the audio it sent to the first reply audio with real energy it
received. The server's own timelines come with each turn. `--ablate` runs, in the same
run, the whole engine off and each latency lever off in turn (app/levers.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app.levers import ablations
from app.process import ServerProcess
from app.transports.realtime.client import BenchClient, RealtimeClient
from app.transports.webrtc.client import Client
from models.wav_files import read_wav
from pipeline.audio import speech_end_sample
from pipeline.events import Pcm

PAUSED = [  # (question, words after which the speaker pauses to think)
    ("Set a timer for ten minutes.", "for"),
    ("What is the capital of Spain?", "of"),
    ("Tell me a fun fact about the moon.", "about"),
    ("Can you remind me to call my mother tomorrow?", "call"),
    ("Turn off the lights in the kitchen.", "in"),
    ("What is the weather like in Paris today?", "like"),
    ("Play some music by the Beatles.", "by"),
    ("How far is the moon from the earth?", "moon"),
]
HELD_OUT = [  # more of the same, never used to tune the end-of-turn thresholds
    ("Remind me to buy milk when I get home.", "buy"),
    ("What is the population of Japan?", "of"),
    ("Tell me how to make pancakes.", "to"),
    ("Add eggs and butter to my shopping list.", "and"),
    ("What time does the pharmacy close tonight?", "pharmacy"),
    ("Send a message to my brother saying I am late.", "to"),
    ("Who painted the Mona Lisa?", "the"),
    ("How many legs does a spider have?", "does"),
]
PAUSE_S = 0.7
EARLY_S = 0.25
"""A turn is cut off when the server heard its speech end this long before the words did
(a normal turn ends ~80 ms *after* them: transport). Counting words instead would call a
word Whisper dropped a cut-off."""
METRIC_KEYS = ("ttfa_client", "ttfa_server", "ttfa_browser", "ttft", "ttua", "endpoint",
               "asr_final", "first_clause", "mic_path", "speaker_path")
"""`mic_path`: the true end of speech leaving the client → the server's end of speech
(transport and VAD); `speaker_path`: the first reply frame leaving the server → heard by
the client. With `ttfa_server` they add up to `ttfa_client` (one clock: same machine)."""


@dataclass
class Utterance:
    text: str
    pcm: Pcm
    paused: bool = False
    held_out: bool = False
    voice: str = "piper x1"
    """Who spoke it (app.bench.voices)."""

    @property
    def speech_end(self) -> int:
        return speech_end_sample(self.pcm)


@dataclass
class TurnResult:
    text: str
    transcript: str
    reply: str
    ttfa_client_ms: float | None
    timeline_ms: dict[str, float]
    cut_off: bool = False
    held_out: bool = False
    transport_ms: dict[str, float] = field(default_factory=dict)
    done_logprob: float | None = None
    """The turn detector's verdict on the speculative transcript (None: not asked)."""


@dataclass
class ConfigResult:
    name: str
    flags: list[str]
    turns: list[TurnResult] = field(default_factory=list)
    paused: list[TurnResult] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def values(self, key: str) -> list[float]:
        if key == "ttfa_client":
            return [t.ttfa_client_ms for t in self.turns if t.ttfa_client_ms is not None]
        if key in ("mic_path", "speaker_path"):
            return [t.transport_ms[key] for t in self.turns if key in t.transport_ms]
        return [t.timeline_ms[key] for t in self.turns if key in t.timeline_ms]

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"turns": len(self.turns)}
        for key in METRIC_KEYS:
            if values := self.values(key):
                p50, p95, p99 = np.percentile(values, [50, 95, 99])
                out[key] = {"p50": round(float(p50), 1), "p95": round(float(p95), 1),
                            "p99": round(float(p99), 1)}
        if self.paused:
            out["paused"] = len(self.paused)
            out["false_cutoffs"] = sum(t.cut_off for t in self.paused)
            out["false_cutoff_rate"] = round(out["false_cutoffs"] / len(self.paused), 3)
            out["false_cutoffs_held_out"] = sum(t.cut_off for t in self.paused if t.held_out)
        if speculation := self.stats.get("engine", {}).get("speculation"):
            out["speculation"] = speculation  # started / committed / cancelled, waste
        return out


async def _ask(client: BenchClient, utterance: Utterance, settle_s: float
               ) -> list[dict[str, Any]]:
    """Say one utterance; return the turn events it caused, with the client TTFA."""
    mark = len(client.events)
    speech_end = await client.say(utterance.pcm, utterance.speech_end)
    try:
        await client.wait_for("turn", after=mark, timeout=60)
    except TimeoutError:
        return []
    await asyncio.sleep(settle_s)  # a second turn here means the first was a cut-off
    turns = [e for e in client.events[mark:] if e["type"] == "turn"]
    heard = client.received.first_audible_after(speech_end)
    for turn in turns:
        turn["ttfa_client_ms"], turn["transport_ms"] = None, {}
        # A turn whose speech ended well before the words did was cut off in a pause.
        server_end = turn.get("speech_end_t")
        turn["ended_early"] = server_end is not None and server_end < speech_end - EARLY_S
    if turns and heard is not None:
        last = turns[-1]
        last["ttfa_client_ms"] = round((heard - speech_end) * 1000, 1)
        server_end, sent_ms = last.get("speech_end_t"), last["timeline_ms"].get("ttfa_server")
        if server_end is not None and sent_ms is not None:
            last["transport_ms"] = {
                "mic_path": round((server_end - speech_end) * 1000, 1),
                "speaker_path": round((heard - server_end - sent_ms / 1000) * 1000, 1)}
    return turns


async def run_config(url: str, name: str, flags: list[str], utterances: Sequence[Utterance],
                     paused: Sequence[Utterance], transport: str = "webrtc") -> ConfigResult:
    result = ConfigResult(name, flags)
    async with _client(url, transport) as client:
        await asyncio.sleep(0.5)
        for utterance in [*utterances, *paused]:
            # After a cut-off the rest of the question becomes a turn of its own a few
            # seconds later: wait long enough to count it against this question.
            turns = await _ask(client, utterance, settle_s=4.0 if utterance.paused else 0.3)
            if not turns:
                continue
            last = turns[-1]
            cut = len(turns) > 1 or turns[0]["ended_early"]
            turn = TurnResult(utterance.text, turns[0]["transcript"], last["reply"],
                              last["ttfa_client_ms"], last["timeline_ms"], cut_off=cut,
                              transport_ms=last["transport_ms"], held_out=utterance.held_out,
                              done_logprob=turns[0].get("done_logprob"))
            (result.paused if utterance.paused else result.turns).append(turn)
    return result


def _client(url: str, transport: str) -> contextlib.AbstractAsyncContextManager[BenchClient]:
    """The bench's client for `transport`: WebRTC (the browser's way in) or Realtime."""
    return RealtimeClient(url) if transport == "realtime" else Client(url)


def make_utterances(folder: Path | None, rounds: int) -> tuple[list[Utterance], list[Utterance]]:
    """The shipped question set spoken by the embedded voice (or WAVs from `folder`), and
    the paused questions that measure false cut-offs."""
    from app.bench.utterances import questions, speak
    from models.load import load_synthesizer
    from models.locate import locate
    from pipeline.answer.tts import TtsOptions

    voice = load_synthesizer(locate("tts").path, TtsOptions())
    if folder is not None:
        wavs = sorted(folder.glob("*.wav"))
        if not wavs:
            raise ValueError(f"no .wav files in {folder}")
        base = [Utterance(w.stem, read_wav(w)) for w in wavs]
    else:
        base = [Utterance(q, speak(voice, q, lead_s=0.3, trail_s=0.5)) for q in questions()]
    paused = [Utterance(q, speak(voice, q, lead_s=0.3, trail_s=0.5, pause_at=f" {w} ",
                                 pause_s=PAUSE_S), paused=True, held_out=(q, w) in HELD_OUT)
              for q, w in PAUSED + HELD_OUT]
    return base * rounds, paused


def bench(*, url: str | None, ablate: bool, folder: Path | None, rounds: int, out: Path,
          server_args: Sequence[str] = (), transports: Sequence[str] = ("webrtc",)
          ) -> list[ConfigResult]:
    """`transports`: each is measured on all-on, against the same server in one run (the
    first alone on the ablations); results past the first are named `all-on@NAME`."""
    from app.serve import use_loopback_candidates

    use_loopback_candidates()
    utterances, paused = make_utterances(folder, rounds)
    configs: list[tuple[str, list[str]]] = [("all-on", [])]
    if ablate:
        configs += ablations()  # all-off, then each lever off (app/levers.py)
    results = []
    for name, flags in configs:
        print(f"bench: {name} {' '.join(flags)}", flush=True)
        ways = transports if name == "all-on" else transports[:1]
        if url is not None:
            results += [asyncio.run(run_config(url, _named(name, way, transports), flags,
                                               utterances, paused, way)) for way in ways]
            break
        server = ServerProcess(*server_args, *flags)
        try:
            for way in ways:
                result = asyncio.run(run_config(server.url, _named(name, way, transports), flags,
                                                utterances, paused, way))
                result.stats = {"health": server.get("/healthz"),
                                "engine": server.get("/api/stats").get("engine", {})}
                results.append(result)
        finally:
            server.stop()
        _save(results, out)  # a long --ablate run keeps what it measured if stopped
    report(results, out)
    return results


def _named(name: str, transport: str, transports: Sequence[str]) -> str:
    return name if transport == transports[0] else f"{name}@{transport}"


def _save(results: list[ConfigResult], out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    summaries = {r.name: r.summary() for r in results}
    data = {"summaries": summaries, "configs": [asdict(r) for r in results]}
    (out / "bench.json").write_text(json.dumps(data, indent=1))
    return summaries


def report(results: list[ConfigResult], out: Path) -> None:
    summaries = _save(results, out)
    print(f"\n{'config':<22}{'turns':>6}" + "".join(f"{k + ' p50/p95':>22}" for k in
                                                    ("ttfa_client", "ttfa_server", "ttft")))
    base = summaries[results[0].name].get("ttfa_client", {}).get("p50")
    for name, summary in summaries.items():
        cells = "".join(
            f"{summary[k]['p50']:>12.0f}/{summary[k]['p95']:<9.0f}" if k in summary else f"{'-':>22}"
            for k in ("ttfa_client", "ttfa_server", "ttft"))
        ratio = summary.get("ttfa_client", {}).get("p50")
        extra = f"  x{ratio / base:.2f} vs all-on" if base and ratio and name != results[0].name else ""
        cut = (f"  cut-offs {summary.get('false_cutoffs', 0)}/{summary.get('paused', 0)}"
               f" ({summary.get('false_cutoffs_held_out', 0)}/{len(HELD_OUT)} held out)")
        print(f"{name:<22}{summary['turns']:>6}{cells}{cut}{extra}")
        if spec := summary.get("speculation"):
            print(f"{'':<22}speculation: {spec['started']} started, {spec['committed']} "
                  f"committed, {spec['cancelled']} cancelled ({spec['wasted_tokens']} tokens,"
                  f" {spec['wasted_ms']:.0f} ms wasted)")
    first = summaries[results[0].name]
    print("\nall-on percentiles (ms from end of speech):")
    for key in METRIC_KEYS:
        if key in first:
            print(f"  {key:<14} p50 {first[key]['p50']:>7.0f}  p95 {first[key]['p95']:>7.0f}"
                  f"  p99 {first[key]['p99']:>7.0f}")
    _chart(results, summaries, out / "bench.png")
    print(f"\nwrote {out / 'bench.json'} and {out / 'bench.png'}")


def _chart(results: list[ConfigResult], summaries: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r.name for r in results if "ttfa_client" in summaries[r.name]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.5))
    p50 = [summaries[n]["ttfa_client"]["p50"] for n in names]
    p95 = [summaries[n]["ttfa_client"]["p95"] for n in names]
    y = np.arange(len(names))
    left.barh(y - 0.2, p50, 0.4, label="p50")
    left.barh(y + 0.2, p95, 0.4, label="p95")
    left.set_yticks(y, names)
    left.invert_yaxis()
    left.set_xlabel("TTFA, client-measured (ms)")
    left.legend()
    left.set_title("TTFA by configuration")
    values = results[0].values("ttfa_client")
    right.hist(values, bins=min(20, max(5, len(values))))
    right.set_xlabel("TTFA all-on (ms)")
    right.set_title(f"all-on: {len(values)} turns")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
