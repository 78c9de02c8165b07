"""`apace doctor`'s GPU lines: the llama.cpp build (CPU or CUDA), the device, and what the GPU
tiers need of it (docs/gpu.md). Pure: the caller gives what models.device found."""

from __future__ import annotations

from app.cli.doctor import Check
from models.catalog import TIERS, preferred
from models.device import Build, DevicePlan

OVERHEAD_MB = 1_500
"""The CUDA context, cuBLAS's workspace, Whisper's activations and the LLM's compute buffers,
roughly, beside the weights and the KV of the sequences."""
KV_MB_PER_SEQUENCE = 120
"""A 2048-token sequence of the 7B's KV in f16 (the 1.5B's is half of it)."""


def gpu_checks(found: DevicePlan, build: Build, offload: bool | None) -> list[Check]:
    """The build, the device and the tiers, for the plan `found` with this `build` and
    llama.cpp's own llama_supports_gpu_offload() answer (None: llama_cpp does not load)."""
    return [build_check(build, offload, gpu_present=found.gpu is not None),
            device_check(found), *tier_needs(found)]


def build_check(build: Build, offload: bool | None, *, gpu_present: bool) -> Check:
    if build == "missing":
        return Check("llm build", "fail", "llama-cpp-python is not installed", "`make venv`")
    if build == "cpu":
        return Check("llm build", "warn" if gpu_present else "ok",
                     "CPU build of llama-cpp-python" + (" on a box with a GPU" if gpu_present else ""),
                     "`make gpu`, then `APACE_DEVICE=cuda make run` (docs/gpu.md)")
    if offload is None:
        return Check("llm build", "warn" if gpu_present else "ok", "CUDA build of "
                     "llama-cpp-python; it does not load here (no NVIDIA driver: libcuda.so.1)",
                     "install the NVIDIA driver, or serve from the CPU environment (.venv)")
    if not offload:
        return Check("llm build", "fail", "llama-cpp-python has CUDA libraries but "
                     "llama_supports_gpu_offload() says no", "rebuild: `make clean-gpu gpu`")
    return Check("llm build", "ok", "CUDA build of llama-cpp-python "
                 "(llama_supports_gpu_offload: yes)")


def device_check(found: DevicePlan) -> Check:
    gpu = found.gpu
    if gpu is None:
        return Check("gpu", "ok", "none: serving on the CPU")
    what = (f"{gpu.name}, {gpu.memory_mb / 1024:.0f} GiB ({gpu.free_mb / 1024:.0f} GiB free), "
            f"driver {gpu.driver}" + (f", compute {gpu.compute}" if gpu.compute else ""))
    if found.cuda:
        return Check("gpu", "ok", f"{what}: serving on CUDA, {found.llm_sequences} LLM sequences")
    return Check("gpu", "warn", f"{what}; serving on the CPU: {found.reason}")


def need_mb(llm: str, asr: str, sequences: int) -> int:
    """GPU memory the LLM tier `llm` and the ear `asr` take with `sequences` warm, roughly."""
    return int((TIERS[llm].size + TIERS[asr].size) / 1e6) + sequences * KV_MB_PER_SEQUENCE \
        + OVERHEAD_MB


def tier_needs(found: DevicePlan) -> list[Check]:
    """What each GPU LLM tier needs beside the GPU ear, against the device's memory."""
    if found.gpu is None:
        return []
    ear = preferred("asr", gpu=True)[0]
    checks = []
    for name in preferred("llm", gpu=True)[:2]:
        need = need_mb(name, ear, found.llm_sequences or 4)
        fits = need <= found.gpu.memory_mb
        checks.append(Check(f"tier {name}", "ok" if fits else "warn",
                            f"with {ear} on the GPU: ~{need / 1024:.1f} GiB of "
                            f"{found.gpu.memory_mb / 1024:.0f} GiB",
                            "" if fits else "a smaller tier (--llm qwen2.5-coder-0.5b) or fewer "
                            "--llm-sequences"))
    return checks
