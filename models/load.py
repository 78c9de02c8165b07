"""Loading models once. Library errors become `ModelError`s that name the file."""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from models.choice import AUTO, locate_noisy_asr
from models.drafts import ModelDraft, PromptLookup, same_vocabulary
from models.llama_responder import LlamaResponder
from models.locate import Located, ModelError, locate
from models.piper import PiperSynthesizer
from models.piper_stream import StreamingVoice, WholeGraph, release_garbage
from models.prompt_state import PromptState, warm_with
from models.shared_llm import SharedLlama
from models.shared_responder import SeqResponder
from models.turn_detector import LlamaTurnDetector, TurnPrompt
from models.whisper import WhisperTranscriber
from pipeline.answer.drafts import Drafter
from pipeline.answer.llm import LlmOptions
from pipeline.answer.tts import TtsOptions
from pipeline.compute.stats import DraftStats
from pipeline.compute.workers import CpuLock
from pipeline.listen.asr import AsrOptions

if TYPE_CHECKING:
    from llama_cpp import Llama

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class ModelChoice:
    """Which models to use: None means env var → config → best pulled tier → embedded
    (models.choice)."""

    asr: str | None = None
    llm: str | None = None
    tts: str | None = None
    turn: str | None = None
    """The turn detector's GGUF (None: env → config → the embedded SmolLM2)."""
    asr_device: str = "cpu"
    """"cpu" or "cuda" (CTranslate2)."""
    asr_compute_type: str = "int8"
    threads: int = 0
    """CPU threads per model; 0 = all cores."""
    noisy_asr: str | None = AUTO
    """The noisy-room ear: a Whisper tier name or folder, AUTO (APACE_NOISY_ASR if set,
    else the config file's noisy_asr, else NOISY_ASR_TIER where it is pulled), "off" or
    None (none: every room is heard by the `asr` model)."""

    gpu: bool = False
    """Served on a CUDA device: the best pulled tiers are taken in the GPU order
    (models.catalog.PREFERRED_GPU)."""

    def resolve(self) -> dict[str, Located]:
        located = {"asr": locate("asr", self.asr, gpu=self.gpu),
                   "llm": locate("llm", self.llm, gpu=self.gpu),
                   "tts": locate("tts", self.tts), "turn": locate("turn", self.turn)}
        noisy = locate_noisy_asr(self.noisy_asr, located["asr"])
        if noisy is not None:
            located["noisy_asr"] = noisy
        return located


def cpu_threads(requested: int) -> int:
    return requested if requested > 0 else max(1, os.cpu_count() or 1)


@functools.lru_cache(maxsize=4)
def load_transcriber(
    path: Path, device: str, compute_type: str, threads: int, options: AsrOptions
) -> WhisperTranscriber:
    from faster_whisper import WhisperModel

    try:
        model = WhisperModel(
            str(path), device=device, compute_type=compute_type, cpu_threads=threads
        )
    except (RuntimeError, ValueError, OSError) as error:
        raise ModelError(f"cannot load the Whisper model at {path}: {error}") from None
    return WhisperTranscriber(model, options)


@functools.lru_cache(maxsize=4)
def load_synthesizer(path: Path, options: TtsOptions, use_cuda: bool = False) -> PiperSynthesizer:
    from piper import PiperVoice

    try:
        voice = PiperVoice.load(path, use_cuda=use_cuda)
    except Exception as error:  # onnxruntime raises its own exception types
        raise ModelError(f"cannot load the Piper voice at {path}: {error}") from None
    providers = [("CUDAExecutionProvider", {"cudnn_conv_algo_search": "HEURISTIC"})] \
        if use_cuda else ["CPUExecutionProvider"]
    stream = StreamingVoice.split(voice, path, providers) if options.stream else None
    if stream is not None:
        voice.session = WholeGraph(stream)
    release_garbage()
    return PiperSynthesizer(voice, voice_id=path.stem, options=options, stream=stream)


def open_responder(path: Path, options: LlmOptions, draft_stats: DraftStats | None = None,
                   states: tuple[PromptState, PromptState] | None = None) -> LlamaResponder:
    """A new llama context (weights are memory-mapped, so shared between contexts).
    `states`: the LLM's and the draft model's prompt starts, shared by every context the
    engine opens (models/prompt_state.py), so each new one copies the system prompt's KV."""
    from llama_cpp import Llama

    drafter = None
    if options.drafts or options.prompt_lookup or options.draft_model:
        drafter = Drafter(draft_stats)
        if options.prompt_lookup:
            drafter.always.append(PromptLookup)

    try:
        llama = Llama(
            str(path),
            n_ctx=options.n_ctx,
            n_threads=options.threads,
            n_threads_batch=options.threads,
            n_gpu_layers=options.gpu_layers,
            draft_model=cast(Any, drafter),  # duck-typed: llama-cpp-python only calls it
            # llama-cpp-python 0.3.36 sizes its logits buffer by this argument, not by the
            # draft model's need: without it, verifying a draft past position n_batch (512)
            # fails ("could not broadcast … into shape (0,)"). Rows are written only for
            # drafted replies (LlamaResponder toggles logits per reply).
            logits_all=drafter is not None,
            verbose=False,
        )
    except (ValueError, RuntimeError, OSError) as error:
        raise ModelError(f"cannot load the GGUF model at {path}: {error}") from None
    responder = LlamaResponder(llama, model_id=path.name, options=options)
    if states is not None:
        responder.prompt_state = states[0]
    if options.draft_model and drafter is not None:
        draft = _open_draft_model(Path(options.draft_model), llama, options)
        drafter.always.append(lambda: ModelDraft(draft))
        responder.also_close.append(draft.close)
        if states is not None:
            draft_state = states[1]
            responder.also_warm.append(lambda tokens: warm_with(draft_state, draft, tokens))
    return responder


def open_shared(path: Path, options: LlmOptions, *, sequences: int = 5,
                cpu: CpuLock | None = None, draft_stats: DraftStats | None = None,
                batch: int = 512) -> SharedLlama:
    """The LLM loaded once for every conversation (models/shared_llm.py), with KV for
    `sequences` - 1 conversations at a time (more are evicted and read again). The
    `Llama` object gives the vocabulary and chat template; its own context is a token one."""
    from llama_cpp import Llama

    try:
        llama = Llama(str(path), n_ctx=64, n_threads=options.threads,
                      n_threads_batch=options.threads, n_gpu_layers=options.gpu_layers,
                      verbose=False)
        shared = SharedLlama(llama, n_ctx=options.n_ctx, sequences=sequences,
                             threads=options.threads, cpu=cpu, draft_stats=draft_stats,
                             batch=batch)
    except (ValueError, RuntimeError, OSError) as error:
        raise ModelError(f"cannot load the GGUF model at {path}: {error}") from None
    shared.set_template(SeqResponder(shared, path.name, options).next_prompt_start([]))
    return shared


def _open_draft_model(path: Path, target: Llama, options: LlmOptions) -> Llama:
    from llama_cpp import Llama

    found = locate("llm", path)  # the same checks as any GGUF
    try:
        draft = Llama(str(found.path), n_ctx=options.n_ctx, n_threads=options.threads,
                      n_threads_batch=options.threads, n_gpu_layers=options.gpu_layers,
                      verbose=False)
    except (ValueError, RuntimeError, OSError) as error:
        target.close()
        raise ModelError(f"cannot load the draft model at {path}: {error}") from None
    if not same_vocabulary(target, draft):
        draft.close()
        target.close()
        raise ModelError(f"the draft model {path} does not share the LLM's vocabulary; pass "
                         f"a smaller model of the same family with --draft-model")
    return draft


def open_turn_detector(path: Path, threads: int,
                       prompt: TurnPrompt | None = None) -> LlamaTurnDetector:
    """The end-of-turn model: its own small context over the memory-mapped weights.

    `threads`: all cores when it takes turns with the other models on the CPU; one when it
    runs beside them (a llama context whose threads get preempted stalls at every step:
    measured 43-48 ms per check with one thread under load, seconds with two)."""
    from llama_cpp import Llama

    try:
        llama = Llama(str(path), n_ctx=256, n_threads=threads, n_threads_batch=threads,
                      verbose=False)
        return LlamaTurnDetector(llama, prompt or TurnPrompt())
    except (ValueError, RuntimeError, OSError) as error:
        raise ModelError(f"cannot use {path} as the turn detector: {error}. Fix: pass a "
                         f"ChatML GGUF such as SmolLM2-135M-Instruct with --turn-model.") from None
