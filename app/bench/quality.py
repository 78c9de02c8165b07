"""`apace bench --quality`: scripted spoken conversations, scored, beside their TTFA.

The conversations are text in conversations.toml (tuned on), conversations_heldout.toml
(never tuned on) and conversations_blind.toml (never tuned on, and drawn from Home
Assistant's intent templates), each question with the rule that says what a right reply
looks like (app.bench.conversations, pipeline.quality). The embedded voice speaks the tuned
ones, other voices the rest (app.bench.voices), into a real `apace serve` over WebRTC at
real-time pace: one client per conversation, the next question
once the reply has played out — or, where a turn says `interrupt_after_s`, that long after
the reply is first heard, over it. Each configuration gets a fresh data directory, kept
across a `restart_before`.
"""

from __future__ import annotations

import asyncio
import math
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import aiohttp

from app.bench.conversations import (
    EVENTS,
    SPLITS,
    ConversationSpec,
    TurnSpec,
    conversation_set,
)
from app.bench.latency import Utterance
from app.bench.quality_report import QualityResult, TurnOutcome, report, save
from app.bench.voices import make_utterances, utterance_key, voice_for
from app.process import ServerProcess, free_port
from app.transports.webrtc.client import Client
from pipeline.quality import failed, score_turn
from pipeline.timeline import now


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    reply_timeout_s: float = 30.0
    """A turn with no reply this long after its speech ended is scored "no reply"."""
    quiet_s: float = 0.5
    """Reply audio silent this long has played out: the user speaks next."""
    settle_s: float = 1.0
    """Wait after a conversation's last reply for late events (a timer, a cut-off's turn)."""
    transport: str = "webrtc"
    """How the client talks to the server: "webrtc" (app.transports.webrtc.client), "realtime" (the
    OpenAI-Realtime websocket, app.transports.realtime.client) or "wyoming" (Home
    Assistant's pipeline, app.transports.wyoming.client)."""
    wyoming_url: str | None = None
    """tcp://HOST:PORT of the Wyoming server started beside `apace serve` for this run."""


class Server(Protocol):
    @property
    def url(self) -> str: ...

    def alive(self) -> bool: ...

    def restart(self) -> bool:
        """Stop and start it with the same data; False when this bench cannot."""
        ...


@dataclass
class RunningServer:
    """A server the bench did not start (`--url`): it cannot be restarted."""

    url: str

    def alive(self) -> bool:
        return True

    def restart(self) -> bool:
        return False


class ManagedServer:
    """`apace serve` with its own data directory, which outlives a restart."""

    def __init__(self, args: Sequence[str], data_dir: Path) -> None:
        self.args, self.env = list(args), {"APACE_DATA_DIR": str(data_dir)}
        self.process = ServerProcess(*self.args, env=self.env)

    @property
    def url(self) -> str:
        return self.process.url

    def alive(self) -> bool:
        return self.process.alive()

    def restart(self) -> bool:
        self.process.stop()
        self.process = ServerProcess(*self.args, env=self.env)
        return True

    def stop(self) -> None:
        self.process.stop()


@dataclass
class _Mark:
    start: float
    """When this turn's first audio left the client."""
    speech_end: float


async def run_config(server: Server, name: str, flags: list[str],
                     conversations: Sequence[ConversationSpec],
                     utterances: Mapping[str, Utterance],
                     options: RunOptions = RunOptions()) -> QualityResult:
    """Every conversation against `server`, in order. Cancelling is safe (clients close)."""
    result = QualityResult(name, flags)
    for conversation in conversations:
        try:
            if conversation.restart_before or not server.alive():
                if not server.alive():
                    result.errors.append(f"server was down before {conversation.name!r}")
                if not await asyncio.to_thread(server.restart):
                    result.errors.append(f"{conversation.name!r}: cannot restart this server")
        except RuntimeError as error:
            result.errors.append(f"restart before {conversation.name!r} failed: {error}")
        outcomes, problem = await run_conversation(server.url, conversation, utterances, options)
        result.turns += outcomes
        if problem:
            result.errors.append(f"{conversation.name!r}: {problem}")
    return result


async def run_conversation(url: str, conversation: ConversationSpec,
                           utterances: Mapping[str, Utterance], options: RunOptions,
                           ) -> tuple[list[TurnOutcome], str | None]:
    """Speak one conversation on its own WebRTC session; score what came back. A failure
    mid-way scores the turns not reached as wrong and names it."""
    client, problem = _client(options.wyoming_url or url, options.transport), None
    marks: list[_Mark] = []
    spoken = [utterances[utterance_key(turn.say, voice_for(conversation, i))]
              for i, turn in enumerate(conversation.turns)]
    try:
        await client.connect()
        await asyncio.sleep(0.5)
        for turn, utterance in zip(conversation.turns, spoken, strict=True):
            marks.append(await _speak(client, turn, utterance, options))
        await asyncio.sleep(options.settle_s)
    except (ConnectionError, TimeoutError, OSError, aiohttp.ClientError) as error:
        problem = f"{type(error).__name__}: {error}"
    finally:
        await client.close()
    return _outcomes(conversation, marks, client, problem or "",
                     [u.voice for u in spoken]), problem


def _client(url: str, transport: str) -> Any:
    if transport == "realtime":
        from app.transports.realtime.client import RealtimeClient

        return RealtimeClient(url)
    if transport == "wyoming":
        from app.transports.wyoming.client import WyomingClient

        return WyomingClient(url)
    if transport != "webrtc":
        raise ValueError(f"--transport {transport!r}: choose webrtc, realtime or wyoming")
    return Client(url)


async def _speak(client: Any, turn: TurnSpec, utterance: Utterance,
                 options: RunOptions) -> _Mark:
    if turn.wait_s:
        await asyncio.sleep(turn.wait_s)
    start = now()
    mark = _Mark(start, await client.say(utterance.pcm, utterance.speech_end))
    deadline = mark.speech_end + options.reply_timeout_s
    if turn.interrupt_after_s is not None:
        while (heard := client.received.first_audible_after(mark.speech_end)) is None:
            if now() > deadline:
                return mark
            await _tick(client, 0.02)
        await asyncio.sleep(max(0.0, heard + turn.interrupt_after_s - now()))
        return mark
    # The server sends the turn event once the reply has played; wait for its tail too.
    while not any(e["type"] == "turn" and _t(e) >= start for e in client.events):
        if now() > deadline:
            return mark
        await _tick(client, 0.05)
    while (last := client.received.last_audible()) is not None and now() - last < options.quiet_s:
        await asyncio.sleep(0.05)
    return mark


async def _tick(client: Any, seconds: float) -> None:
    """Sleep while waiting for a reply; a dropped session ends the conversation now rather
    than after every remaining turn's timeout."""
    if client.connection_failed:
        raise ConnectionError("the session was closed")
    await asyncio.sleep(seconds)


def _t(event: dict[str, Any]) -> float:
    """When the user's speech that caused a turn event ended (server clock = ours)."""
    t = event.get("speech_end_t")
    return float(t) if t is not None else float(event["received"])


def _outcomes(conversation: ConversationSpec, marks: list[_Mark], client: Any,
              problem: str, voices: Sequence[str]) -> list[TurnOutcome]:
    starts = [m.start for m in marks] + [math.inf]
    end = now()
    earlier: list[str] = []
    out = []
    for index, spec in enumerate(conversation.turns):
        outcome = TurnOutcome(conversation.name, index + 1, spec.say,
                              score_turn(spec.rule, "", spec.say, earlier),
                              held_out=conversation.held_out, blind=conversation.blind,
                              voice=voices[index], expect_refusal=spec.rule.refusal)
        if index >= len(marks):
            outcome.score = failed(outcome.score, f"not reached ({problem})")
        else:
            _fill(outcome, spec, marks[index], starts[index + 1], client, earlier)
            if spec.expect_event and not any(
                    e["type"] == spec.expect_event and starts[index] <= e["received"] <= end
                    for e in client.events):
                outcome.score = failed(outcome.score, f"no {spec.expect_event} event")
            if spec.turn_event and spec.turn_event not in outcome.events:
                outcome.score = failed(outcome.score, f"no {spec.turn_event} event in the turn")
        out.append(outcome)
    return out


def _fill(outcome: TurnOutcome, spec: TurnSpec, mark: _Mark, next_start: float,
          client: Any, earlier: list[str]) -> None:
    """The turn events whose speech ended in this turn's window make its reply (the last
    one: a question the server split in two is answered once, by its last part)."""
    mine = [e for e in client.events if e["type"] == "turn" and mark.start <= _t(e) < next_start]
    outcome.events = [e["type"] for e in client.events
                      if e["type"] in EVENTS and mark.start <= e["received"] < next_start]
    if not mine:
        return
    last = mine[-1]
    outcome.transcript = " / ".join(str(e.get("transcript", "")) for e in mine)
    outcome.reply = str(last.get("reply", ""))
    outcome.skill = last.get("skill")
    outcome.interrupted = bool(last.get("interrupted"))
    outcome.score = score_turn(spec.rule, outcome.reply, outcome.transcript or spec.say, earlier)
    if outcome.reply.strip():
        earlier.append(outcome.reply)
    if outcome.interrupted and spec.interrupt_after_s is None:
        outcome.score = failed(outcome.score, "cut off, not by the user")
    if spec.no_event and spec.no_event in outcome.events:
        outcome.score = failed(outcome.score, f"unexpected {spec.no_event} event")
    outcome.timeline_ms = dict(last.get("timeline_ms") or {})
    outcome.done_logprob = last.get("done_logprob")
    outcome.degraded = [str(kind) for kind in last.get("degraded") or []]
    outcome.first_heard = last.get("first_heard")
    server_ms = outcome.timeline_ms.get("ttfa_server")
    outcome.ttfa_server_ms = server_ms
    # The first audible audio after the server sent this reply: a timer's chime played
    # before it is not the reply.
    end_t = last.get("speech_end_t")
    if end_t is not None:
        outcome.speech_end_lag_ms = round((end_t - mark.speech_end) * 1000, 1)
    sent = end_t + server_ms / 1000 if end_t is not None and server_ms is not None else 0.0
    heard = client.received.first_audible_after(max(sent, mark.speech_end))
    if heard is not None and heard < next_start:
        outcome.ttfa_client_ms = round((heard - mark.speech_end) * 1000, 1)


def parse_compare(specs: Sequence[str]) -> list[tuple[str, list[str]]]:
    """ "name=--flag value ..." → (name, flags) for each `--compare`."""
    configs = []
    for spec in specs:
        name, sep, flags = spec.partition("=")
        if not sep or not name.strip() or name.strip() == "default":
            raise ValueError(f"--compare {spec!r}: write NAME=FLAGS, e.g. "
                             "\"qwen0.5=--llm-model /path/model.gguf\" (NAME not 'default')")
        configs.append((name.strip(), shlex.split(flags)))
    if len({n for n, _ in configs}) < len(configs):
        raise ValueError("--compare names must differ")
    return configs


def bench_quality(*, url: str | None, out: Path, server_args: Sequence[str] = (),
                  compare: Sequence[str] = (), only: Sequence[str] = (),
                  files: Sequence[Path] = (),
                  options: RunOptions = RunOptions()) -> list[QualityResult]:
    """Run the conversations on the default configuration and each `--compare` one;
    `files`: these conversation files instead of the shipped ones, scored as held out
    (spoken in the other voices) but shown turn by turn: a dev split to look into."""
    from app.serve import use_loopback_candidates

    use_loopback_candidates()
    configs = [("default", []), *parse_compare(compare)]
    conversations = conversation_set(only, files=[(f, "held_out") for f in files] or SPLITS)
    utterances = make_utterances(conversations)
    results: list[QualityResult] = []
    for name, flags in configs:
        print(f"bench --quality: {name} {' '.join(flags)}", flush=True)
        if url is not None:
            results.append(asyncio.run(run_config(
                RunningServer(url), name, flags, conversations, utterances, options)))
            break
        with tempfile.TemporaryDirectory(prefix="apace-quality-") as data:
            # Admission off: a conversation must not be refused because the one before
            # it is still closing (the bench measures answers, not admission).
            wyoming: list[str] = []
            if options.transport == "wyoming":  # Home Assistant's way in, beside it
                port = free_port()
                wyoming = ["--wyoming", str(port)]
                options = replace(options, wyoming_url=f"tcp://127.0.0.1:{port}")
            server = ManagedServer(["--no-admission", *wyoming, *server_args, *flags],
                                   Path(data))
            try:
                result = asyncio.run(run_config(server, name, flags, conversations, utterances,
                                                options))
                if server.alive():
                    result.stats = server.process.get("/api/stats").get("engine", {})
            finally:
                server.stop()
        results.append(result)
        save(results, out)  # a stopped run keeps the configurations it finished
    report(results, out)
    return results
