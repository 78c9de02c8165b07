"""`apace bench --room`: the shipped questions asked in a room, over real WebRTC.

The bench client's microphone hears the room (app.bench.room_sounds.RoomMix): background
talk or noise at a set level below the user, all the time, and — in the echo conditions —
the reply it receives, played back into its own microphone some milliseconds later and
some dB down, as a laptop's speaker is heard by its microphone without echo cancellation.
In the conditions with talk-overs, the user also asks a question that gets a long reply
and talks over it.

Per condition: turns, phantom turns (a turn that is not one of the questions asked, or a
question's second turn; turns are matched to questions in order: app.bench.room_score),
lost questions (no turn), WER of the transcripts (a lost question counts as all words
deleted), self-interruptions (a barge-in while the user was silent), talk-overs honoured
(a barge-in while the user talked over the reply) with the time from the user's first sound
to the reply's last audible audio at the client, and client TTFA p50/p95 of the questions.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from app.bench.latency import Utterance
from app.bench.room_report import pair_with_clean, report
from app.bench.room_score import Asked, summarize
from app.bench.room_sounds import Float, RoomMix, active_rms, babble, pink_noise, scaled, white_noise
from app.process import ServerProcess
from app.transports.client_audio import ENERGY_DBFS
from app.transports.webrtc.client import Client
from pipeline.answer.tts import first_sound
from pipeline.events import FRAME_SAMPLES, SAMPLE_RATE
from pipeline.timeline import now

TALK_TAIL_S = 3.0
"""How long the talk of the `-after` conditions goes on after each question."""


@dataclass(frozen=True)
class Condition:
    """A room: `noise` ("babble", "pink", "white" or None) `snr_db` below the user at the
    usual level, the reply's echo `echo_db` (None: none) after `echo_delay_s`, and the
    user `voice_db` from the usual level (a soft or distant talker); `echo_rt60_s`: the
    echo comes through a reverberant room (0: straight from the loudspeaker)."""

    name: str
    noise: str | None = None
    snr_db: float = 0.0
    echo_db: float | None = None
    echo_delay_s: float = 0.1
    talk_overs: int = 0
    voice_db: float = 0.0
    echo_rt60_s: float = 0.0
    backchannels: int = 0
    talk_tail_s: float | None = None
    """None: the room's sound goes on all the time. A number: the room is quiet but from
    each question's first sound to this long after its end: people who talk on after the
    user stops (a television, others in the room) in a room the gate had heard quiet."""


CONDITIONS = {c.name: c for c in (
    Condition("clean", talk_overs=3),
    Condition("babble15", "babble", 15),
    Condition("babble10", "babble", 10),
    # Talk that starts with the question and goes on after it (the speech-end lag).
    Condition("babble15-after", "babble", 15, talk_tail_s=TALK_TAIL_S),
    Condition("pink10", "pink", 10),
    Condition("pink25", "pink", 25),
    Condition("white25", "white", 25),
    Condition("echo10", echo_db=-10, echo_delay_s=0.1, talk_overs=3),
    Condition("echo6-200ms", echo_db=-6, echo_delay_s=0.2, talk_overs=3),
    Condition("echo10-babble15", "babble", 15, echo_db=-10, echo_delay_s=0.1, talk_overs=3),
    # The echo through a living room (reflections for 0.4 s), as a laptop's microphone
    # hears its own loudspeaker.
    Condition("echo10-room", echo_db=-10, echo_delay_s=0.1, talk_overs=3, echo_rt60_s=0.4),
    # A talker 30 dB softer than usual over a microphone's own hiss (25 dB under them).
    Condition("soft30", "white", 55, voice_db=-30),
)}
DEFAULT_CONDITIONS = ("clean", "babble15", "pink10", "white25", "echo10")
LONG_ASK = "Tell me a story about a dragon who lived by the sea."
"""A question whose reply lasts long enough to be talked over."""
GAP_S = 1.0
"""The room alone between a reply's end and the next question."""
BACKCHANNELS = ("Mm-hm.", "Okay.", "I see.", "Uh-huh.", "Yeah, yeah.", "Right.")
"""A listener's "go on", said over the long reply: it must let the reply go on."""


@dataclass
class ConditionResult:
    condition: Condition
    asked: list[Asked] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


def parse_conditions(spec: str | None) -> list[Condition]:
    """ "babble15,echo10" → those conditions; None or "" → the default set."""
    names = [n.strip() for n in (spec or "").split(",") if n.strip()] or list(DEFAULT_CONDITIONS)
    unknown = [n for n in names if n not in CONDITIONS]
    if unknown:
        raise ValueError(f"--room: unknown condition {', '.join(unknown)}; choose from "
                         f"{', '.join(CONDITIONS)}")
    return [CONDITIONS[n] for n in names]


async def _ask(client: Client, utterance: Utterance, mix: RoomMix | None = None,
               tail_s: float | None = None) -> Asked:
    """Say one question and wait for its reply to play out; with `tail_s`, the `mix`'s
    room talks from its first sound to `tail_s` after its end."""
    if mix is not None and tail_s is not None:
        first = (first_sound(utterance.pcm) or 0) / SAMPLE_RATE
        mix.talk(after_s=first, for_s=utterance.speech_end / SAMPLE_RATE - first + tail_s)
    asked = await _say(client, utterance)
    end = asked.end
    heard = await _until(lambda: client.received.first_audible_after(end), 15.0)
    if heard is not None:
        asked.ttfa_ms = round((heard - end) * 1000, 1)
    await _quiet(client, 0.7, 25.0)
    return asked


async def _talk_over(client: Client, long_ask: Utterance, over: Utterance,
                     after_s: float, *, backchannel: bool = False) -> list[Asked]:
    """Ask for a long reply, then talk over it `after_s` after it is first heard (with a
    `backchannel`, a listener's "mm-hm": the reply should go on)."""
    first = await _say(client, long_ask)
    first.lead_in = True
    heard = await _until(lambda: client.received.first_audible_after(first.end), 15.0)
    if heard is None:
        return [first]
    await asyncio.sleep(max(0.0, heard + after_s - now()))
    talk = await _say(client, over)
    talk.talk_over, talk.backchannel = not backchannel, backchannel
    # Playing: heard in the last half second (the talk-over may begin in the pause after a
    # comma, between two clauses: "Dragon lives by the sea, | with its long legs…").
    playing = client.received.audible_between(talk.start - 0.5, talk.start + 0.06)
    last = max((at for at, db in client.received.levels
                if at < talk.start and db > ENERGY_DBFS), default=None)
    talk.quiet_before_ms = round((talk.start - last) * 1000, 1) if last is not None else None
    # Its own reply comes next: let it play out before the next question.
    await _until(lambda: client.received.first_audible_after(talk.end + 0.3), 15.0)
    await _quiet(client, 0.7, 25.0)
    barge = [e["received"] for e in client.events if e["type"] == "barge_in"
             and talk.start <= e["received"] <= talk.end + 0.6]
    # A talk-over tests a barge-in only if the reply had more to play than a barge-in
    # takes (~0.4 s): a one-sentence story can end under it by itself.
    # (A backchannel is said over the reply if it was playing: whether it went on is scored.)
    talk.over_reply = bool(playing) and (backchannel or bool(barge) or bool(
        client.received.audible_between(talk.start + 0.45, talk.start + 1.0)))
    if playing and barge:
        stopped = stopped_at(client.received.levels, talk.start, barge[0])
        talk.stopped_ms = round((stopped - talk.start) * 1000, 1) if stopped else None
    return [first, talk]


async def _say(client: Client, utterance: Utterance) -> Asked:
    """Send `utterance`; returns when it is sent, with when its first and last sound left."""
    pcm = utterance.pcm
    cut = min(len(pcm), ((first_sound(pcm) or 0) // FRAME_SAMPLES + 1) * FRAME_SAMPLES)
    started = client.mic.say(pcm[:cut])  # resolves as the frame with the first sound leaves
    end = await client.say(pcm[cut:], max(0, utterance.speech_end - cut))
    return Asked(utterance.text, await started, end)


RECEIVE_SLACK_S = 0.15
"""Reply audio already on its way when the barge-in was told (the client's receive buffer);
the answer to what was said over the reply comes after the user's endpoint, seconds later."""


def stopped_at(levels: Sequence[tuple[float, float]], start: float, barge: float,
               slack_s: float = RECEIVE_SLACK_S) -> float | None:
    """When a reply talked over at `start` went quiet for good: its last audible received
    frame up to the barge-in told at `barge` (and what was on its way then). A hold silences
    the reply before the barge-in; it may be let go and play on, and then this is when it
    was held again. (Taking the last frame before the first 0.3 s of quiet after the
    barge-in, as the bench did, read the end of the *answer* whenever the hold had silenced
    the reply by then: the 1.6-7.4 s "talk-overs" of earlier runs.)"""
    audible = [at for at, db in levels if start <= at <= barge + slack_s and db > -45.0]
    return audible[-1] if audible else None


async def _until(probe: Any, timeout: float) -> Any:
    deadline = now() + timeout
    while (value := probe()) is None and now() < deadline:
        await asyncio.sleep(0.02)
    return value


async def _quiet(client: Client, quiet_s: float, timeout: float) -> None:
    deadline = now() + timeout
    while now() < deadline:
        last = client.received.last_audible()
        if last is None or now() - last >= quiet_s:
            return
        await asyncio.sleep(0.05)


async def run_condition(url: str, condition: Condition, questions: Sequence[Utterance],
                        long_ask: Utterance, room: Float | None, *,
                        ask: bool = True, backchannels: Sequence[Utterance] = ()
                        ) -> ConditionResult:
    """One fresh WebRTC session in this room: every question (unless not `ask`), then the
    talk-overs (said with the questions' words), then the backchannels."""
    mix = RoomMix(room, echo_db=condition.echo_db, echo_delay_s=condition.echo_delay_s,
                  voice_db=condition.voice_db, echo_rt60_s=condition.echo_rt60_s,
                  always=condition.talk_tail_s is None)
    result = ConditionResult(condition)
    async with Client(url, mix=mix.mix, hear=mix.hear) as client:
        await asyncio.sleep(1.0)  # the room is heard before anyone speaks
        for utterance in questions if ask else ():
            result.asked.append(await _ask(client, utterance, mix, condition.talk_tail_s))
            await asyncio.sleep(GAP_S)
        for index in range(condition.talk_overs):
            over = questions[index % len(questions)]
            # 1.0, 1.2, 1.4 s in: a story reply is often one sentence (~2 s).
            result.asked += await _talk_over(client, long_ask, over,
                                             after_s=1.0 + 0.2 * (index % 3))
            await asyncio.sleep(GAP_S)
        for index in range(condition.backchannels if backchannels else 0):
            result.asked += await _talk_over(client, long_ask,
                                             backchannels[index % len(backchannels)],
                                             after_s=1.0 + 0.2 * (index % 3), backchannel=True)
            await asyncio.sleep(GAP_S)
        await asyncio.sleep(1.0)
        result.events = [{k: e.get(k) for k in ("type", "received", "speech_end_t",
                                                "transcript", "reply", "interrupted",
                                                "skill", "timeline_ms")}
                         for e in client.events if e["type"] in ("turn", "barge_in")]
    result.summary = summarize(result.asked, result.events)
    return result


def make_rooms(conditions: Sequence[Condition], level: float, voice: Any,
               seconds: float = 60.0) -> dict[str, Float | None]:
    """Each condition's room sound, `snr_db` below the active speech `level`."""
    rng = np.random.default_rng(7)
    made: dict[str, Float] = {}
    rooms: dict[str, Float | None] = {}
    for condition in conditions:
        kind = condition.noise
        if kind is None:
            rooms[condition.name] = None
            continue
        if kind not in made:
            samples = int(seconds * SAMPLE_RATE)
            made[kind] = (babble(voice, seconds, rng) if kind == "babble" else
                          pink_noise(samples, rng) if kind == "pink" else
                          white_noise(samples, rng))
        rooms[condition.name] = scaled(made[kind], level, condition.snr_db)
    return rooms


def room_questions(held_out: bool) -> list[str]:
    """The shipped question set (the room gate was tuned on it), or the held-out lines of
    the ASR set (app/bench/asr_set.txt: never used to tune the gate nor the ear)."""
    if held_out:
        from app.bench.asr import asr_set

        return [line.text for line in asr_set() if line.held_out]
    from app.bench.utterances import questions

    return questions()


def bench_room(*, url: str | None, out: Path, rounds: int, conditions: Sequence[Condition],
               server_args: Sequence[str] = (), held_out: bool = False,
               talk_overs: int | None = None,
               backchannels: int | None = None) -> list[ConditionResult]:
    """Every condition in turn on one server. `talk_overs`, `backchannels`: that many
    talk-overs (questions) and backchannels ("mm-hm") over a long reply in every condition,
    and no questions (a barge-in comparison: many in a few minutes)."""
    conditions = _with_counts(conditions, talk_overs, backchannels)
    from app.bench.utterances import speak
    from app.serve import use_loopback_candidates
    from models.load import load_synthesizer
    from models.locate import locate
    from pipeline.answer.tts import TtsOptions

    use_loopback_candidates()
    voice = load_synthesizer(locate("tts").path, TtsOptions())
    questions = [Utterance(q, speak(voice, q, lead_s=0.3, trail_s=0.5))
                 for q in room_questions(held_out)] * rounds
    long_ask = Utterance(LONG_ASK, speak(voice, LONG_ASK, lead_s=0.3, trail_s=0.5))
    channels = [Utterance(b, speak(voice, b, lead_s=0.3, trail_s=0.5)) for b in BACKCHANNELS]
    level = float(np.mean([active_rms(q.pcm) for q in questions]))
    rooms = make_rooms(conditions, level, voice)
    # -v: the server's log (saved beside the results) tells each hold, barge-in and echo
    # guard verdict (its delay, what comes back) with its time
    server = ServerProcess(*server_args, verbose=True) if url is None else None
    results: list[ConditionResult] = []
    try:
        for condition in conditions:
            print(f"bench --room: {condition.name}", flush=True)
            target = server.url if server is not None else str(url)
            before = _speculation(server)
            results.append(asyncio.run(run_condition(target, condition, questions, long_ask,
                                                     rooms[condition.name],
                                                     ask=talk_overs is None and backchannels is None,
                                                     backchannels=channels)))
            if server is not None:  # what the server's speculation did in this condition
                after = _speculation(server)
                results[-1].summary["speculation"] = {
                    key: round(value - before.get(key, 0), 1) for key, value in after.items()}
            pair_with_clean(results)
            _save(results, out)
    finally:
        if server is not None:
            server.stop()
            out.mkdir(parents=True, exist_ok=True)
            (out / "server.log").write_bytes(server.log)  # which ear, what was heard again
    report(results)
    print(f"\nwrote {out / 'bench_room.json'}")
    return results


def _with_counts(conditions: Sequence[Condition], talk_overs: int | None,
                 backchannels: int | None) -> Sequence[Condition]:
    """The conditions with these many talk-overs and backchannels each, if either is given."""
    for count, flag in ((talk_overs, "--talk-overs"), (backchannels, "--backchannels")):
        if count is not None and not 1 <= count <= 50:
            raise ValueError(f"{flag} must be 1-50")
    if talk_overs is None and backchannels is None:
        return conditions
    return [replace(c, talk_overs=talk_overs or 0, backchannels=backchannels or 0)
            for c in conditions]


def _speculation(server: ServerProcess | None) -> dict[str, float]:
    """The server's speculation counters (started, committed, cancelled, reheard, kept…)
    how many replies the noisy-room ear heard (noisy_ear_replies), and how many replies
    were held for speech over them (holds) and went on after it (holds_released)."""
    if server is None:
        return {}
    engine = server.get("/api/stats").get("engine", {})
    counters = {**engine.get("speculation", {}),
                **{key: engine.get(key, 0)
                   for key in ("noisy_ear_replies", "holds", "holds_released")}}
    return {key: value for key, value in counters.items() if isinstance(value, int | float)}


def _save(results: Sequence[ConditionResult], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    data = {"summaries": {r.condition.name: r.summary for r in results},
            "conditions": [asdict(r) for r in results]}
    (out / "bench_room.json").write_text(json.dumps(data, indent=1))
