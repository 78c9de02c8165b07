"""Is there a CUDA device this environment can use, and how `apace serve` uses it.

`plan(probe)` is the pure decision: every LLM layer on the GPU, Whisper in float16 on it,
the GPU tiers first (models.catalog.PREFERRED_GPU) and more LLM sequences for the device's
memory; or the CPU defaults with the reason it fell back: no CUDA build of llama-cpp-python
(`make gpu`), no device, or a driver too old for CUDA 13. `SystemProbe` asks this box,
with no heavy dependency: the llama_cpp package's libraries (not imported: a CUDA build
does not load without a driver), nvidia-smi, and the driver library through ctypes.
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

log = logging.getLogger(__name__)

Build = Literal["cuda", "cpu", "missing"]
MIN_DRIVER_CUDA = 13_000
"""cuDriverGetVersion's number for CUDA 13.0, which `make gpu` builds llama.cpp with."""
MIN_DRIVER = "580.65.06"
"""The first Linux driver with CUDA 13.0 (R580)."""


@dataclass(frozen=True, kw_only=True)
class Gpu:
    name: str
    memory_mb: int
    free_mb: int
    driver: str
    """The driver's own version ("580.95.05")."""
    compute: str = ""
    """The compute capability ("9.0"), where nvidia-smi says."""


class Probe(Protocol):
    """What `plan` needs to know about this box; tests give it a fake."""

    def llama_build(self) -> Build: ...

    def gpus(self) -> list[Gpu]: ...

    def driver_cuda(self) -> int | None:
        """The CUDA version the driver supports (13000 for 13.0); None: no driver."""
        ...


@dataclass(frozen=True, kw_only=True)
class DevicePlan:
    """How the engine runs on this box, and why."""

    cuda: bool
    reason: str
    gpu: Gpu | None = None
    gpu_layers: int = 0
    """llama.cpp layers on the GPU; -1: all of them."""
    asr_device: str = "cpu"
    asr_compute_type: str = "int8"
    llm_sequences: int = 4
    """Conversations the shared LLM keeps in its KV at once (--llm-sequences)."""

    def line(self) -> str:
        if self.cuda and self.gpu is not None:
            return (f"device: CUDA, {self.gpu.name} ({self.gpu.memory_mb / 1024:.0f} GiB): every "
                    f"LLM layer on the GPU, Whisper float16, the GPU tiers, "
                    f"{self.llm_sequences} LLM sequences")
        return f"device: CPU ({self.reason})"


def plan(probe: Probe) -> DevicePlan:
    """The device-aware defaults for what `probe` finds (pure: no I/O of its own)."""
    build, gpus = probe.llama_build(), probe.gpus()
    if not gpus:
        return DevicePlan(cuda=False, reason="no CUDA device: no NVIDIA driver, or nvidia-smi "
                          "lists no GPU")
    gpu = gpus[0]
    if build != "cuda":
        what = "is not installed" if build == "missing" else "is a CPU build"
        return DevicePlan(cuda=False, gpu=gpu, reason=f"{gpu.name} found, but llama-cpp-python "
                          f"{what}: `make gpu` builds the CUDA one, `APACE_DEVICE=cuda make run` "
                          "serves with it")
    driver = probe.driver_cuda()
    if driver is None or driver < MIN_DRIVER_CUDA:
        has = "an unknown CUDA version" if driver is None else \
            f"CUDA {driver // 1000}.{driver % 1000 // 10}"
        return DevicePlan(cuda=False, gpu=gpu, reason=f"{gpu.name} found, but its driver "
                          f"{gpu.driver} supports {has}; this build needs CUDA 13.0: driver "
                          f">= {MIN_DRIVER}")
    return DevicePlan(cuda=True, gpu=gpu, reason=f"{gpu.name}, driver {gpu.driver}",
                      gpu_layers=-1, asr_device="cuda", asr_compute_type="float16",
                      llm_sequences=sequences_for(gpu.memory_mb))


def sequences_for(memory_mb: int) -> int:
    """LLM sequences for a device with this much memory. A sequence's 2048-token KV is
    ~60 MB for the 1.5B and ~120 MB for the 7B (f16): a big device keeps 16 conversations
    warm, where a CPU box keeps 4 (--llm-sequences overrides)."""
    return 16 if memory_mb >= 16_000 else 8 if memory_mb >= 8_000 else 4


class SystemProbe:
    """This box, asked without importing any model library."""

    def llama_build(self) -> Build:
        found = importlib.util.find_spec("llama_cpp")
        if found is None or not found.submodule_search_locations:
            return "missing"
        lib = Path(next(iter(found.submodule_search_locations))) / "lib"
        return "cuda" if any(lib.glob("libggml-cuda*")) else "cpu"

    def gpus(self) -> list[Gpu]:
        smi = shutil.which("nvidia-smi")
        if smi is None:
            return []
        try:
            done = subprocess.run(
                [smi, "--query-gpu=name,memory.total,memory.free,driver_version,compute_cap",
                 "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20,
                check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            log.info("nvidia-smi failed: %s", error)
            return []
        return parse_smi(done.stdout) if done.returncode == 0 else []

    def driver_cuda(self) -> int | None:
        try:
            driver = ctypes.CDLL("libcuda.so.1")
        except OSError:
            return None
        version = ctypes.c_int(0)
        return version.value if driver.cuDriverGetVersion(ctypes.byref(version)) == 0 else None


def parse_smi(text: str) -> list[Gpu]:
    """nvidia-smi's CSV (name, memory.total, memory.free, driver, compute capability)."""
    found = []
    for line in text.strip().splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) < 4:
            continue
        try:
            total, free = int(float(fields[1])), int(float(fields[2]))
        except ValueError:
            continue
        found.append(Gpu(name=fields[0], memory_mb=total, free_mb=free, driver=fields[3],
                         compute=fields[4] if len(fields) > 4 else ""))
    return found


def llama_offload() -> bool | None:
    """llama.cpp's own answer (llama_supports_gpu_offload), where llama_cpp loads; None
    where it does not (a CUDA build on a box without the driver)."""
    try:
        from models import cuda_libs

        cuda_libs.preload()
        import llama_cpp
    except (ImportError, OSError, RuntimeError) as error:
        log.info("llama_cpp does not load: %s", error)
        return None
    return bool(llama_cpp.llama_supports_gpu_offload())
