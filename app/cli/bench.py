"""`apace bench`: its flags and which bench they run (latency, --quality, --room, --asr,
--misheard, --sessions).

The benches themselves live in app/bench; they are imported only when run.
"""

from __future__ import annotations

import argparse

from app.cli.errors import UsageError


def command(args: argparse.Namespace) -> int:
    """Run `apace bench` as its flags say (UsageError names a bad value)."""
    from pathlib import Path

    from app.bench import bench

    if args.asr:
        return _bench_asr(args)
    if args.misheard:
        return _bench_misheard(args)
    if args.quality:
        return _bench_quality(args)
    if args.room is not None:
        return _bench_room(args)
    if args.sessions is not None:
        return _bench_sessions(args)
    if args.compare or args.only or args.conversations:
        raise UsageError("--compare, --only and --conversations go with --quality")
    if args.rounds < 1:
        raise UsageError("--rounds must be at least 1")
    folder = Path(args.utterances) if args.utterances else None
    if folder is not None and not folder.is_dir():
        raise UsageError(f"--utterances {folder} is not a folder of WAV files")
    if "wyoming" in (args.transport or ()):
        raise UsageError("--transport wyoming goes with --quality (Wyoming's turns are "
                         "driven by the client, not by apace's endpointer)")
    try:
        bench(url=args.url, ablate=args.ablate, folder=folder, rounds=args.rounds,
              out=Path(args.out), server_args=args.server_arg or (),
              transports=tuple(dict.fromkeys(args.transport or ["webrtc"])))
    except (ValueError, RuntimeError) as error:
        raise UsageError(str(error)) from None
    return 0


def _bench_quality(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.bench.quality import RunOptions, bench_quality

    if args.sessions is not None:
        return _bench_quality_sessions(args)
    transports = list(dict.fromkeys(args.transport or ["webrtc"]))
    if len(transports) > 1:
        raise UsageError("--quality runs over one --transport (webrtc, realtime or wyoming)")
    try:
        bench_quality(url=args.url, out=Path(args.out), server_args=args.server_arg or (),
                      compare=args.compare or (), only=args.only or (),
                      files=[Path(f) for f in args.conversations or ()],
                      options=RunOptions(transport=transports[0]))
    except (ValueError, RuntimeError) as error:
        raise UsageError(str(error)) from None
    return 0


def _bench_quality_sessions(args: argparse.Namespace) -> int:
    """`apace bench --quality --sessions N`: the conversations N at a time, scored and timed."""
    from pathlib import Path

    from app.bench.quality_sessions import bench_quality_sessions
    from app.bench.sessions import parse_sessions

    if args.url:
        raise UsageError("--quality --sessions starts its own servers: drop --url")
    try:
        bench_quality_sessions(counts=parse_sessions(args.sessions), out=Path(args.out),
                               server_args=args.server_arg or (), compare=args.compare or (),
                               only=args.only or ())
    except (ValueError, RuntimeError) as error:
        raise UsageError(str(error)) from None
    return 0


def _bench_room(args: argparse.Namespace) -> int:
    """`apace bench --room`: the questions in background talk, noise and the reply's echo."""
    from pathlib import Path

    from app.bench.room import bench_room, parse_conditions

    try:
        bench_room(url=args.url, out=Path(args.out), rounds=args.rounds,
                   conditions=parse_conditions(args.room), server_args=args.server_arg or (),
                   held_out=args.held_out, talk_overs=args.talk_overs,
                   backchannels=args.backchannels)
    except (ValueError, RuntimeError) as error:
        raise UsageError(str(error)) from None
    return 0


def _bench_sessions(args: argparse.Namespace) -> int:
    """`apace bench --sessions N`: N conversations at once on one server, TTFA per N."""
    from pathlib import Path

    from app.bench.sessions import bench_sessions, parse_sessions

    try:
        bench_sessions(url=args.url, counts=parse_sessions(args.sessions), out=Path(args.out),
                       rounds=args.rounds, server_args=args.server_arg or ())
    except (ValueError, RuntimeError) as error:
        raise UsageError(str(error)) from None
    return 0


def _bench_asr(args: argparse.Namespace) -> int:
    """`apace bench --asr`: WER and ASR time per Whisper tier, vocabulary bias off and on."""
    from pathlib import Path

    from app.bench.asr import bench_asr, parse_tiers

    try:
        tiers = parse_tiers(args.asr_tiers) if args.asr_tiers else None
        bench_asr(Path(args.out), tiers=tiers)
    except (ValueError, RuntimeError) as error:
        raise UsageError(str(error)) from None
    return 0


def _bench_misheard(args: argparse.Namespace) -> int:
    """`apace bench --misheard`: requests heard in noise, and whether they reach their skill."""
    from pathlib import Path

    from app.bench.misheard import bench_misheard

    try:
        bench_misheard(Path(args.out), rounds=args.rounds)
    except (ValueError, RuntimeError) as error:
        raise UsageError(str(error)) from None
    return 0


def bench_flags(bench: argparse.ArgumentParser) -> None:
    """`apace bench`'s flags (the parser's `run` is set by app.cli)."""
    bench.add_argument("--url", help="bench a running server instead of starting one")
    bench.add_argument("--transport", action="append", choices=("webrtc", "realtime", "wyoming"),
                       help="the way in to measure: webrtc (default) and/or realtime (the "
                            "OpenAI-Realtime websocket), all in one run (repeatable); with "
                            "--quality also wyoming (Home Assistant's pipeline)")
    bench.add_argument("--ablate", action="store_true",
                       help="also run the whole engine off and each latency lever off")
    bench.add_argument("--utterances", metavar="DIR", help="WAV questions instead of the set")
    bench.add_argument("--rounds", type=int, default=2, help="times through the question set")
    bench.add_argument("--out", default="artifacts/bench", help="where JSON and PNG go")
    bench.add_argument("--server-arg", action="append", metavar="ARG",
                       help="extra argument for the `apace serve` the bench starts")
    bench.add_argument("--quality", action="store_true",
                       help="score what it says in scripted conversations, beside TTFA"
                       " (bench_quality.json/.png)")
    bench.add_argument("--compare", action="append", metavar="NAME=FLAGS",
                       help="with --quality: also run a configuration, e.g."
                       " \"qwen0.5=--llm-model /path.gguf\" (repeatable)")
    bench.add_argument("--only", action="append", metavar="NAME",
                       help="with --quality: run only this conversation (repeatable)")
    bench.add_argument("--conversations", action="append", metavar="FILE",
                       help="with --quality: the conversations of this TOML file instead of the"
                       " shipped ones, as a dev split of its own, in the held-out voices"
                       " (repeatable; e.g. a new draw of app.bench.blind_sample --out FILE)")
    bench.add_argument("--asr", action="store_true",
                       help="word error rate and ASR time per Whisper tier, vocabulary bias"
                       " off and on, on the shipped spoken set (asr.json/.png)")
    bench.add_argument("--misheard", action="store_true",
                       help="speak the ASR set and the held-out routing set in background talk"
                       " and pink noise, hear them with the noisy-room ear, and count how many"
                       " still reach the skill that answers them (misheard.json)")
    bench.add_argument("--asr-tiers", metavar="NAME=DIR,...",
                       help="with --asr: the Whisper folders to compare (default: every"
                       " tier on this box)")
    bench.add_argument("--room", nargs="?", const="", metavar="CONDITIONS",
                       help="ask the questions in a room (background talk, noise, the reply's"
                       " echo); CONDITIONS: comma-separated names (app/bench/room.py), default"
                       " clean,babble15,pink10,white25,echo10 (bench_room.json)")
    bench.add_argument("--sessions", metavar="SPEC",
                       help="N WebRTC clients talking at once to one server, staggered; SPEC:"
                       " a count or comma-separated counts 1-16, e.g. 1,2,3,4 (client TTFA"
                       " and RSS per idle session per count: bench_sessions.json/.png); with"
                       " --quality: the scored conversations N at a time, each level a row")
    bench.add_argument("--talk-overs", type=int, metavar="N",
                       help="with --room: N talk-overs in each condition and no questions (how"
                       " soon a reply stops for a user who talks over it, N stops per room)")
    bench.add_argument("--backchannels", type=int, metavar="N",
                       help="with --room: N backchannels ('mm-hm', 'okay') over a long reply in"
                       " each condition and no questions (how many cut the reply, or were"
                       " answered; with --talk-overs, after them)")
    bench.add_argument("--held-out", action="store_true",
                       help="with --room: ask the ASR set's held-out lines (never tuned on)"
                       " instead of the question set")
