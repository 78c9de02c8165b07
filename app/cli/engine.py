"""The engine's flags (talk, serve, wyoming, cluster serve) and the Settings they make.

The latency levers' flags come from app/levers.py, declared once there.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any, TypeVar

from app import levers
from app.cli.errors import UsageError
from models.catalog import TIERS
from models.choice import AUTO, NOISY_ASR_ENV, NOISY_ASR_TIER
from models.device import DevicePlan, Probe, SystemProbe, plan
from models.load import ModelChoice
from pipeline.answer.integrity import IntegrityOptions
from pipeline.answer.llm import LlmOptions
from pipeline.conversation_options import ConversationOptions
from pipeline.listen.asr import AsrOptions
from pipeline.listen.vad import VadOptions
from pipeline.room import RoomOptions

T = TypeVar("T")
DEVICE_ENV = "APACE_DEVICE"


def settings_from(args: argparse.Namespace) -> Any:
    """The engine's Settings from its flags (UsageError naming the flag when one is wrong)."""
    from app.runtime import EngineOptions, Settings

    if args.threads < 0:
        raise UsageError("--threads must be 0 (all cores) or a positive number")
    if not 0.2 <= args.caption_interval <= 10:
        raise UsageError("--caption-interval must be 0.2-10 seconds")
    conversation = ConversationOptions(
        vad=_checked(VadOptions, "--endpoint-ms / --onset-ms / --vad-aggressiveness",
                     endpoint_ms=args.endpoint_ms, aggressiveness=args.vad_aggressiveness,
                     onset_ms=args.onset_ms),
        partial_interval_s=args.caption_interval,
        **_checked(_talk_over, "--barge-in-ms / --hold-ms / --held-barge-in-ms",
                   barge_in_ms=args.barge_in_ms, hold=args.hold_ms, held=args.held_barge_in_ms),
        integrity=_checked(IntegrityOptions, "--max-sentences / --reply-words / --history-exchanges",
                           max_sentences=args.max_sentences, max_exchanges=args.history_exchanges,
                           reply_words=args.reply_words,
                           keep_interrupted=args.keep_interrupted,
                           copy_guard=not args.no_copy_guard),
        room=_checked(RoomOptions, "--agc", enabled=not args.no_room_gate,
                      always_suppress=args.always_denoise, gain_dbfs=args.agc,
                      echo_cancel=args.echo_cancel),
    )
    device = device_plan(args.device)
    asr_device = device.asr_device if args.asr_device == "auto" else args.asr_device
    settings = Settings(
        models=ModelChoice(asr=args.asr_model or args.asr, llm=args.llm_model or args.llm,
                           tts=args.tts_voice, turn=args.turn_model,
                           asr_device=asr_device, threads=args.threads,
                           noisy_asr=args.noisy_asr, gpu=device.cuda,
                           asr_compute_type="int8" if asr_device == "cpu" else "float16"),
        device=device,
        asr=_checked(AsrOptions, "--asr-beam / --noisy-asr-beam", beam_size=args.asr_beam,
                     noisy_beam_size=args.noisy_asr_beam),
        # 0: every core, as for the other models (the models take turns on the CPU).
        llm=LlmOptions(threads=args.threads or max(1, os.cpu_count() or 1),
                       gpu_layers=device.gpu_layers if args.llm_gpu_layers is None
                       else args.llm_gpu_layers,
                       **({"system_prompt": args.system_prompt} if args.system_prompt else {})),
        conversation=conversation,
        engine=_checked(EngineOptions, "--llm-sequences",
                        denoiser=None if args.denoiser == "off" else args.denoiser,
                        skills=not args.no_skills, data_dir=args.data_dir,
                        llm_sequences=device.llm_sequences if args.llm_sequences is None
                        else args.llm_sequences),
    )
    try:
        return levers.apply(settings, args)
    except ValueError as error:
        raise UsageError(str(error)) from None


def device_plan(wanted: str, probe: Probe | None = None) -> DevicePlan:
    """models.device's plan for this box (--device auto), or the CPU (--device cpu); --device
    cuda where the plan cannot use the GPU is a UsageError saying why not."""
    if wanted not in ("auto", "cpu", "cuda"):  # argparse does not check an env default
        raise UsageError(f"{DEVICE_ENV}={wanted!r}: use auto, cpu or cuda")
    if wanted == "cpu":
        return DevicePlan(cuda=False, reason="--device cpu")
    found = plan(probe or SystemProbe())
    if wanted == "cuda" and not found.cuda:
        raise UsageError(f"--device cuda (or {DEVICE_ENV}=cuda), but {found.reason}")
    return found


def _talk_over(barge_in_ms: int, hold: str, held: str) -> dict[str, Any]:
    """ConversationOptions' barge-in fields from --barge-in-ms, --hold-ms and
    --held-barge-in-ms (MS or off)."""
    hold_ms = None if hold == "off" else _ms(hold, "--hold-ms")
    held_ms = None if held == "off" else _ms(held, "--held-barge-in-ms")
    ConversationOptions(barge_in_ms=barge_in_ms, hold_ms=hold_ms,
                        held_barge_in_ms=held_ms)  # refuses a bad combination
    return {"barge_in_ms": barge_in_ms, "hold_ms": hold_ms, "held_barge_in_ms": held_ms}


def _ms(value: str, flag: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{flag} takes milliseconds or off, got {value!r}") from None


def _checked(options: Callable[..., T], flags: str, **values: Any) -> T:
    """`options(**values)`; a value it refuses is a UsageError naming the flags."""
    try:
        return options(**values)
    except ValueError as error:
        raise UsageError(f"{error} (check {flags})") from None


def model_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "models (default: env var, then the config file, then the best pulled tier, then the"
        " embedded one: docs/configuration.md)")
    asr = group.add_mutually_exclusive_group()
    asr.add_argument("--asr-model", metavar="DIR", help="CTranslate2 Whisper model folder")
    asr.add_argument("--asr", metavar="TIER", choices=_tier_names("asr"),
                     help="an ASR tier by name: " + ", ".join(_tier_names("asr")))
    llm = group.add_mutually_exclusive_group()
    llm.add_argument("--llm-model", metavar="GGUF", help="llama.cpp GGUF file")
    llm.add_argument("--llm", metavar="TIER", choices=_tier_names("llm"),
                     help="an LLM tier by name: " + ", ".join(_tier_names("llm")))
    group.add_argument("--noisy-asr", metavar="TIER|DIR|off", default=AUTO,
                       help="a sturdier Whisper for streams whose room is noisy (background"
                       f" talk, noise); {AUTO}: ${NOISY_ASR_ENV} if set, else the config file's"
                       f" noisy_asr, else the {NOISY_ASR_TIER} tier where it is pulled (`apace"
                       " models pull whisper-base`); off: one ear (default %(default)s)")
    group.add_argument("--tts-voice", metavar="ONNX", help="Piper voice .onnx (with .onnx.json)")
    group.add_argument("--turn-model", metavar="GGUF",
                       help="end-of-turn model (ChatML GGUF; default the embedded SmolLM2)")


def _tier_names(kind: str) -> list[str]:
    return [name for name, tier in TIERS.items() if tier.kind == kind]


def engine_flags(parser: argparse.ArgumentParser) -> None:
    model_flags(parser)
    group = parser.add_argument_group("engine")
    group.add_argument("--threads", type=int, default=0, help="CPU threads per model (0: all)")
    group.add_argument("--device", choices=("auto", "cpu", "cuda"),
                       default=os.environ.get(DEVICE_ENV, "auto"),
                       help="auto: a CUDA device where this build, a GPU and its driver allow"
                       " (every LLM layer on it, Whisper float16, the GPU tiers: docs/gpu.md),"
                       f" else the CPU; default ${DEVICE_ENV}, else %(default)s")
    group.add_argument("--asr-device", choices=("auto", "cpu", "cuda"), default="auto",
                       help="Whisper's device (auto: --device's choice)")
    group.add_argument("--asr-beam", type=int, metavar="N", default=AsrOptions().beam_size,
                       help="Whisper's beam width, 1-10 (1: greedy; default %(default)s)")
    group.add_argument("--noisy-asr-beam", type=int, metavar="N",
                       default=AsrOptions().noisy_beam_size,
                       help="the noisy-room ear's beam width, 1-10 (default %(default)s)")
    group.add_argument("--barge-in-ms", type=int, metavar="MS",
                       default=ConversationOptions().barge_in_ms,
                       help="confirmed speech over a reply that interrupts it"
                       " (default %(default)s)")
    group.add_argument("--hold-ms", metavar="MS|off", default=str(ConversationOptions().hold_ms),
                       help="confirmed speech over a reply that holds it quiet until the"
                       " barge-in is decided; it goes on if the speech stops (default"
                       " %(default)s)")
    group.add_argument("--held-barge-in-ms", metavar="MS|off",
                       default=str(ConversationOptions().held_barge_in_ms),
                       help="confirmed speech over a held reply that interrupts it before"
                       " its words are heard at a pause (a 'mm-hm' lets it go on; off:"
                       " --barge-in-ms; default %(default)s)")
    group.add_argument("--llm-gpu-layers", type=int, default=None,
                       help="LLM layers on the GPU (CUDA build of llama-cpp-python; -1: all;"
                       " default: all on a CUDA device, else 0)")
    group.add_argument("--system-prompt", help="replace the default short-answer system prompt")
    group.add_argument("--llm-sequences", type=int, default=None, metavar="N",
                       help="conversations whose history the shared LLM keeps in its KV at"
                       " once (2048 tokens each); beyond them the least recently used is"
                       " read again when it speaks (default 4; on a CUDA device 8-16, by its"
                       " memory)")
    group.add_argument("--endpoint-ms", type=int, default=VadOptions().endpoint_ms,
                       help="silence that ends the user's turn (default %(default)s)")
    group.add_argument("--onset-ms", type=int, default=VadOptions().onset_ms,
                       help="silence after which the reply is prepared, in case the turn is"
                       " over (default %(default)s)")
    group.add_argument("--vad-aggressiveness", type=int, default=2, help="webrtcvad mode 0-3")
    group.add_argument("--caption-interval", type=float, metavar="S",
                       default=ConversationOptions().partial_interval_s,
                       help="seconds of speech between live captions (default %(default)s)")
    levers.add_flags(parser)
    _room_flags(parser)
    _says_flags(parser)


def _room_flags(parser: argparse.ArgumentParser) -> None:
    room = parser.add_argument_group("the room (pipeline/room)")
    room.add_argument("--denoiser", choices=("webrtc", "rnnoise", "off"), default="webrtc",
                      help="noise suppression of raw microphone audio (a browser that did its"
                      " own is not suppressed again; rnnoise needs pyrnnoise; default %(default)s)")
    room.add_argument("--always-denoise", action="store_true",
                      help="suppress noise in a quiet room too (default: only once the room's"
                      " own level is noisy, above -50 dBFS)")
    room.add_argument("--agc", type=int, default=0, metavar="DBFS",
                      help="automatic gain on what the recognizer hears of raw microphone audio:"
                      " the level to aim for, dB below full scale (1-31, e.g. 3; default 0: off)")
    room.add_argument("--echo-cancel", action="store_true",
                      help="take our own replies out of raw microphone audio with WebRTC's echo"
                      " canceller (needs livekit: pip install 'apace-voice[aec]'; default: the"
                      " echo guard alone keeps a reply from interrupting itself)")
    room.add_argument("--no-room-gate", action="store_true",
                      help="webrtcvad alone decides who speaks: no room level, no echo guard,"
                      " no neural VAD (nor noise suppression)")


def _says_flags(parser: argparse.ArgumentParser) -> None:
    says = parser.add_argument_group("what it says")
    says.add_argument("--no-skills", action="store_true",
                      help="no built-in skills (timers, lists, arithmetic, units, time, spelling):"
                      " the LLM answers everything")
    says.add_argument("--data-dir", metavar="DIR",
                      help="where the shopping list and notes are kept (default $APACE_DATA_DIR,"
                      " else ~/.local/share/apace)")
    says.add_argument("--max-sentences", type=int, default=IntegrityOptions().max_sentences,
                      help="sentences in a spoken reply unless more is asked (default %(default)s)")
    says.add_argument("--reply-words", type=int, metavar="N",
                      default=IntegrityOptions().reply_words,
                      help="an LLM reply starts no further sentence after N words unless more"
                      " is asked (0: up to 45; default %(default)s)")
    says.add_argument("--history-exchanges", type=int, default=IntegrityOptions().max_exchanges,
                      help="past exchanges the LLM reads (default %(default)s)")
    says.add_argument("--keep-interrupted", action="store_true",
                      help="the LLM also reads replies the user cut off (what was heard)")
    says.add_argument("--no-copy-guard", action="store_true",
                      help="do not regenerate a reply that copies an earlier one")
