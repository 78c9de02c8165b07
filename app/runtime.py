"""Building the engine from the user's choices (CLI flags, env vars, config file)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from models.choice import choices
from models.device import DevicePlan
from models.intents import load_recognizer
from models.list_store import SqliteListStore, default_data_dir
from models.load import (
    ModelChoice,
    cpu_threads,
    load_synthesizer,
    load_transcriber,
    open_responder,
    open_shared,
    open_turn_detector,
)
from models.locate import Located, ModelError, locate
from models.prompt_state import PromptState
from models.room import room_factory
from models.shared_responder import SeqResponder
from models.timer_journal import TimerJournal
from models.turn_detector import TurnPrompt
from models.whisper import WhisperTranscriber
from pipeline.answer.llm import LlmOptions
from pipeline.answer.tts import TtsOptions
from pipeline.compute.workers import CpuLock
from pipeline.conversation_options import ConversationOptions
from pipeline.engine import ClosableResponder, Engine, LightTier
from pipeline.listen.asr import AsrOptions
from pipeline.skills import Skill

log = logging.getLogger(__name__)


DENOISERS = ("webrtc", "rnnoise", None)


@dataclass(frozen=True, kw_only=True)
class EngineOptions:
    """How the engine around the models is built: its caches, helpers and sharing."""

    tts_cache: bool = True
    """Replay the audio of a clause spoken before (pipeline.answer.caches.CachedSynthesizer)."""
    reply_cache: bool = True
    """Offer a verified reply cache's entry to the LLM as a draft (pipeline.answer.caches)."""
    turn_detector: bool = True
    """Ask a small LM whether the user has finished (pipeline.listen.turn_detector)."""
    turn_prompt: TurnPrompt = field(default_factory=TurnPrompt)
    """What the turn detector reads and scores (its thresholds: EndpointOptions)."""
    share_cpu: bool = True
    """Models take turns on the CPU instead of running at once (pipeline.compute.workers.CpuLock)."""
    skills: bool = True
    """Built-in skills answer timers, lists, arithmetic, units, time and spelling."""
    denoiser: str | None = "webrtc"
    """Noise suppression of raw microphone audio: "webrtc", "rnnoise" or None."""
    shared_llm: bool = True
    """One LLM context for every conversation, batched (models/shared_llm.py); False: a
    context per conversation. A draft model needs contexts of its own."""
    light_tier: bool = True
    """Under load, a confirmed reply may be written by the embedded SmolLM2-135M instead of
    queueing for the shared LLM (pipeline.compute.degrade, `light-tier`); needs the shared
    LLM, and a main LLM other than SmolLM2 itself."""
    llm_sequences: int = 4
    """Conversations whose KV the shared LLM keeps at once (each n_ctx tokens); more
    are evicted, least recently used first, and read again when they speak."""
    data_dir: str | None = None
    """Where the shopping list and notes persist (None: pipeline.skills.lists default)."""

    def __post_init__(self) -> None:
        if not 1 <= self.llm_sequences <= 63:
            raise ValueError(f"llm_sequences must be 1-63, got {self.llm_sequences}")
        if self.denoiser not in DENOISERS:
            raise ValueError(f"denoiser must be webrtc, rnnoise or None, got {self.denoiser!r}")


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything `build_engine` needs (the CLI makes one from its flags: settings_from)."""

    models: ModelChoice = field(default_factory=ModelChoice)
    asr: AsrOptions = field(default_factory=AsrOptions)
    llm: LlmOptions = field(default_factory=LlmOptions)
    tts: TtsOptions = field(default_factory=TtsOptions)
    conversation: ConversationOptions = field(default_factory=ConversationOptions)
    engine: EngineOptions = field(default_factory=EngineOptions)
    device: DevicePlan | None = None
    """The device-aware defaults these settings took (models.device); None: set by hand."""


def load_ears(settings: Settings, located: dict[str, Located],
              threads: int) -> tuple[WhisperTranscriber, WhisperTranscriber | None]:
    """The ear, and the noisy-room ear where one is located (its own beam width)."""
    models = settings.models
    ear = load_transcriber(located["asr"].path, models.asr_device, models.asr_compute_type,
                           threads, settings.asr)
    noisy = located.get("noisy_asr")
    if noisy is None:
        return ear, None
    return ear, load_transcriber(noisy.path, models.asr_device, models.asr_compute_type,
                                 threads, replace(settings.asr,
                                                  beam_size=settings.asr.noisy_beam_size))


def chosen_models(settings: Settings) -> dict[str, Located]:
    """Locate every model, and print which LLM and ears will serve, why, and how to choose
    others (the first lines of `apace serve` and `apace wyoming`; `apace doctor` says the
    same). Raises ModelError with the fix if one cannot be used."""
    located = settings.models.resolve()
    if settings.device is not None:
        print(f"apace: {settings.device.line()}", flush=True)
    for choice in choices(located, settings.models.noisy_asr, gpu=settings.models.gpu):
        print(f"apace: {choice.line()}", flush=True)
    return located


def build_engine(settings: Settings, located: dict[str, Located] | None = None
                 ) -> tuple[Engine, dict[str, Located]]:
    """Load every model `located` (default: locate them now; raises ModelError with the fix
    if one is unusable)."""
    located = dict(located) if located is not None else settings.models.resolve()
    options = settings.engine
    if not options.turn_detector or settings.conversation.endpoint is None:
        located.pop("turn")  # a fixed endpoint has no use for a verdict
    threads = cpu_threads(settings.models.threads)
    started = time.perf_counter()
    transcriber, noisy_transcriber = load_ears(settings, located, threads)
    synthesizer = load_synthesizer(located["tts"].path, settings.tts)
    llm_path = located["llm"].path
    llm_options = settings.llm

    engine: Engine | None = None
    cpu = CpuLock() if options.share_cpu else None
    shared = None
    if options.shared_llm and not llm_options.draft_model and not llm_options.prompt_lookup:
        shared = open_shared(llm_path, llm_options, sequences=options.llm_sequences + 1, cpu=cpu)

    states = (PromptState(), PromptState())  # the LLM's and the draft's prompt starts

    def open_llm() -> ClosableResponder:
        if shared is not None:
            seq = SeqResponder(shared, llm_path.name, llm_options)
            return ClosableResponder(seq, seq.close)
        stats = engine.stats.draft if engine is not None else None
        responder = open_responder(llm_path, llm_options, stats, states)
        return ClosableResponder(responder, responder.close)

    # Open one context now so that a broken GGUF fails at start-up, not at the first user;
    # warmed, so that contexts of their own copy the prompt start's KV from then on.
    probe = open_llm()
    try:
        probe.responder.warm([])
    finally:
        probe.close()
    light = light_tier(settings, llm_path, cpu) if shared is not None else None
    # Under the CPU lock nothing runs beside it, so it may use every core; without the
    # lock it runs beside the responder and gets one thread (two would stall both).
    detector = (open_turn_detector(located["turn"].path, threads if options.share_cpu else 1,
                                   options.turn_prompt)
                if "turn" in located else None)
    log.info("models loaded in %.1f s", time.perf_counter() - started)
    make_room = room_factory(settings.conversation.room, denoiser=options.denoiser)
    skills, store = stateless_skills(options.data_dir) if options.skills else (None, None)
    # Timers are written down beside the lists; a new process holds none of them yet.
    keeper = TimerJournal(store.path) if store is not None else None
    if keeper is not None:
        keeper.release_all()
    engine = Engine(transcriber, synthesizer, open_llm, settings.conversation,
                    tts_cache=options.tts_cache, reply_cache=options.reply_cache,
                    detector=detector, close_detector=detector.close if detector else None,
                    share_cpu=options.share_cpu, skills=skills, store=store,
                    make_room=make_room, cpu=cpu,
                    shared_llm=shared.close if shared is not None else None,
                    llm_memory=shared.memory if shared is not None else None,
                    noisy_transcriber=noisy_transcriber,
                    recognizer=load_recognizer() if options.skills else None,
                    timer_keeper=keeper, light=light)
    if shared is not None:
        shared.draft_stats = engine.stats.draft
    return engine, located


LIGHT_TIER = "smollm2-135m"
LIGHT_CTX = 1024
LIGHT_BATCH = 64
"""The light tier's tokens per conversation: the system prompt and a short history (its
KV for 4 sequences then holds ~95 MB)."""


def light_tier(settings: Settings, llm_path: Path, cpu: CpuLock | None) -> LightTier | None:
    """The embedded SmolLM2-135M as the light tier, shared and batched like the main LLM;
    None when turned off or when it is the main LLM."""
    options = settings.engine
    if not options.light_tier:
        return None
    try:
        path = locate("llm", LIGHT_TIER).path
    except ModelError:
        return None
    if path.resolve() == llm_path.resolve():
        return None
    light_options = replace(settings.llm, n_ctx=LIGHT_CTX, drafts=False, prompt_lookup=False,
                            draft_model=None)
    # Small steps: its reading of a history (a few hundred tokens the first time it is
    # asked) never holds the CPU lock long in one piece while another reply wants to speak.
    shared = open_shared(path, light_options, sequences=options.llm_sequences, cpu=cpu,
                         batch=LIGHT_BATCH)

    def open_light() -> ClosableResponder:
        seq = SeqResponder(shared, path.name, light_options)
        return ClosableResponder(seq, seq.close)

    return LightTier(open_light, shared.close)


def stateless_skills(data_dir: str | None) -> tuple[list[Skill], SqliteListStore]:
    """The stateless skills every conversation shares, and the list store (per-conversation
    timers are added by the engine). The order matters: the first skill that answers wins."""
    from models.country_data import facts_skill
    from models.element_data import elements_skill
    from models.place_data import world_clock_skill
    from pipeline.skills.clock import ClockSkill
    from pipeline.skills.convert import ConvertSkill
    from pipeline.skills.days import DayFollowUp
    from pipeline.skills.hush import HushSkill
    from pipeline.skills.math import MathSkill
    from pipeline.skills.offline import OfflineSkill
    from pipeline.skills.refusals import RefusalFollowUp
    from pipeline.skills.social import SocialSkill
    from pipeline.skills.spell import SpellSkill

    folder = Path(data_dir).expanduser() if data_dir else default_data_dir()
    store = SqliteListStore(folder / "apace.sqlite3")
    convert = ConvertSkill()
    convert.warm()  # pint's unit registry: ~0.3 s once, not on the first conversion asked
    # Facts before the refusals: "what currency does Japan use" is data, not a live price.
    skills: list[Skill] = [HushSkill(), SocialSkill(), DayFollowUp(), ClockSkill(),
                           world_clock_skill(), MathSkill(), convert, SpellSkill(), facts_skill(),
                           elements_skill(), RefusalFollowUp(), OfflineSkill()]
    return skills, store
