"""Device-aware defaults with the device faked: a CUDA build, a GPU and a CUDA 13 driver put
every LLM layer and Whisper (float16) on the GPU, take the GPU tiers first and size the LLM's
sequences for its memory; anything less falls back to the CPU and says why."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from app.cli import _parser, settings_from
from app.cli import engine as cli_engine
from app.cli.errors import UsageError
from models import cuda_libs, pins
from models.catalog import PREFERRED, PREFERRED_GPU, TIERS, Tier, preferred
from models.choice import choices
from models.device import (
    MIN_DRIVER,
    DevicePlan,
    Gpu,
    SystemProbe,
    parse_smi,
    plan,
    sequences_for,
)
from models.locate import locate

H200 = Gpu(name="NVIDIA H200", memory_mb=143_771, free_mb=143_000, driver="580.95.05",
           compute="9.0")


@dataclass
class FakeProbe:
    build: str = "cuda"
    devices: list[Gpu] = field(default_factory=lambda: [H200])
    driver: int | None = 13_000

    def llama_build(self):  # type: ignore[no-untyped-def]
        return self.build

    def gpus(self) -> list[Gpu]:
        return self.devices

    def driver_cuda(self) -> int | None:
        return self.driver


def test_a_cuda_build_with_a_gpu_and_a_cuda_13_driver_puts_everything_on_the_gpu() -> None:
    found = plan(FakeProbe())
    assert found.cuda and found.gpu == H200
    assert (found.gpu_layers, found.asr_device, found.asr_compute_type) == (-1, "cuda", "float16")
    assert found.llm_sequences == 16
    assert found.line().startswith("device: CUDA, NVIDIA H200 (140 GiB): every LLM layer")


def test_no_gpu_falls_back_to_the_cpu_saying_there_is_no_device() -> None:
    found = plan(FakeProbe(devices=[]))
    assert not found.cuda and found.gpu is None
    assert (found.gpu_layers, found.asr_device, found.asr_compute_type) == (0, "cpu", "int8")
    assert found.llm_sequences == 4
    assert found.line() == "device: CPU (no CUDA device: no NVIDIA driver, or nvidia-smi lists no GPU)"


@pytest.mark.parametrize(("build", "says"), [("cpu", "is a CPU build"),
                                             ("missing", "is not installed")])
def test_a_gpu_without_a_cuda_build_falls_back_and_names_make_gpu(build: str, says: str) -> None:
    found = plan(FakeProbe(build=build))
    assert not found.cuda and found.gpu_layers == 0 and found.asr_device == "cpu"
    assert "NVIDIA H200 found" in found.reason and says in found.reason
    assert "`make gpu`" in found.reason


@pytest.mark.parametrize(("driver", "says"), [(12_040, "supports CUDA 12.4"),
                                              (None, "supports an unknown CUDA version")])
def test_a_driver_older_than_cuda_13_falls_back_naming_the_driver_needed(
        driver: int | None, says: str) -> None:
    found = plan(FakeProbe(driver=driver))
    assert not found.cuda and found.asr_device == "cpu"
    assert says in found.reason and f"driver >= {MIN_DRIVER}" in found.reason
    assert "580.95.05" in found.reason


def test_the_llm_sequences_grow_with_the_device_memory() -> None:
    assert [sequences_for(mb) for mb in (4_096, 8_192, 12_288, 24_576, 143_771)] == [4, 8, 8, 16, 16]
    small = Gpu(name="Jetson", memory_mb=7_600, free_mb=5_000, driver="580.1")
    assert plan(FakeProbe(devices=[small])).llm_sequences == 4


def test_nvidia_smi_csv_is_read_and_junk_lines_skipped() -> None:
    text = ("NVIDIA H200, 143771, 143000, 580.95.05, 9.0\n"
            "garbage\nNVIDIA L4, 23034, [N/A], 580.95.05, 8.9\nNVIDIA A10, 23028, 22000, 580.1\n")
    assert parse_smi(text) == [
        H200, Gpu(name="NVIDIA A10", memory_mb=23_028, free_mb=22_000, driver="580.1")]
    assert parse_smi("") == []


def test_the_system_probe_tells_a_cuda_build_by_its_library(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "llama_cpp"
    (package / "lib").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "lib" / "libggml-cpu.so").write_bytes(b"")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "llama_cpp", raising=False)  # the real one, if imported
    assert SystemProbe().llama_build() == "cpu"
    (package / "lib" / "libggml-cuda.so").write_bytes(b"")
    assert SystemProbe().llama_build() == "cuda"


def test_the_system_probe_without_nvidia_smi_finds_no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert SystemProbe().gpus() == []


# --- the flags -----------------------------------------------------------------------------------


def _settings(probe: FakeProbe, monkeypatch: pytest.MonkeyPatch, *flags: str):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(cli_engine, "SystemProbe", lambda: probe)
    return settings_from(_parser().parse_args(["talk", "q.wav", *flags]))


def test_serve_on_a_cuda_device_offloads_all_layers_runs_whisper_float16_and_takes_gpu_tiers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("APACE_DEVICE", raising=False)
    settings = _settings(FakeProbe(), monkeypatch)
    assert settings.llm.gpu_layers == -1 and settings.engine.llm_sequences == 16
    assert (settings.models.asr_device, settings.models.asr_compute_type) == ("cuda", "float16")
    assert settings.models.gpu and settings.device.cuda


def test_flags_given_win_over_the_device_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("APACE_DEVICE", raising=False)
    settings = _settings(FakeProbe(), monkeypatch, "--llm-gpu-layers", "10", "--asr-device",
                         "cpu", "--llm-sequences", "6")
    assert settings.llm.gpu_layers == 10 and settings.engine.llm_sequences == 6
    assert (settings.models.asr_device, settings.models.asr_compute_type) == ("cpu", "int8")


def test_without_a_device_serve_keeps_the_cpu_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("APACE_DEVICE", raising=False)
    settings = _settings(FakeProbe(devices=[]), monkeypatch)
    assert settings.llm.gpu_layers == 0 and settings.engine.llm_sequences == 4
    assert settings.models.asr_device == "cpu" and not settings.models.gpu


def test_device_cpu_ignores_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _settings(FakeProbe(), monkeypatch, "--device", "cpu")
    assert settings.llm.gpu_layers == 0 and settings.device == DevicePlan(cuda=False,
                                                                           reason="--device cpu")


def test_apace_device_cuda_without_a_usable_gpu_is_a_usage_error_saying_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APACE_DEVICE", "cuda")
    with pytest.raises(UsageError, match=r"APACE_DEVICE=cuda.*is a CPU build"):
        _settings(FakeProbe(build="cpu"), monkeypatch)


def test_an_unknown_apace_device_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APACE_DEVICE", "gpu")
    with pytest.raises(UsageError, match="APACE_DEVICE='gpu': use auto, cpu or cuda"):
        _settings(FakeProbe(), monkeypatch)


# --- the GPU tiers first ---------------------------------------------------------------------------


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("APACE_ASR_MODEL", "APACE_LLM_MODEL", "APACE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("APACE_MODELS_DIR", str(tmp_path / "store"))
    return tmp_path / "store"


def _pulled(tier: Tier, store: Path) -> None:
    """Sparse stand-ins; an unpinned file is pinned as a first pull would pin it."""
    for file in tier.files:
        path = tier.folder(store) / file.name
        path.parent.mkdir(parents=True, exist_ok=True)
        size = file.size if file.size is not None else 64
        with path.open("wb") as handle:
            handle.write(b"GGUF\x03\x00\x00\x00" if file.name.endswith(".gguf") else b"{}")
            handle.truncate(size)
        if not file.pinned:
            pins.record(path.parent, file, size, "0" * 64)


def test_the_gpu_order_puts_the_1_5b_and_large_v3_turbo_first() -> None:
    assert preferred("llm", gpu=True)[0] == "qwen2.5-coder-1.5b"
    assert preferred("asr", gpu=True)[0] == "whisper-large-v3-turbo"
    assert preferred("llm") == PREFERRED["llm"]
    assert all(name in TIERS for order in PREFERRED_GPU.values() for name in order)
    assert TIERS["qwen2.5-7b"].size > 4e9 and TIERS["whisper-large-v3-turbo"].size > 1.5e9


def test_with_the_same_tiers_pulled_a_gpu_serves_the_1_5b_and_a_cpu_the_0_5b(store: Path) -> None:
    for name in ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "whisper-large-v3-turbo"):
        _pulled(TIERS[name], store)
    assert locate("llm").tier == "qwen2.5-coder-0.5b"
    assert locate("asr").tier == "whisper-tiny.en"
    gpu_llm, gpu_asr = locate("llm", gpu=True), locate("asr", gpu=True)
    assert (gpu_llm.tier, gpu_asr.tier) == ("qwen2.5-coder-1.5b", "whisper-large-v3-turbo")
    llm, _, _ = choices({"llm": gpu_llm, "asr": gpu_asr}, gpu=True)
    assert "GPU order qwen2.5-coder-1.5b > qwen2.5-7b" in llm.why


def test_a_gpu_tier_with_no_recorded_pin_is_not_pulled(store: Path) -> None:
    tier = TIERS["qwen2.5-7b"]
    _pulled(tier, store)
    assert locate("llm", gpu=True).tier == "qwen2.5-7b"
    (tier.folder(store) / pins.PINS).unlink()
    assert locate("llm", gpu=True).tier == "smollm2-135m"


def test_cuda_libraries_are_found_under_site_packages(tmp_path: Path) -> None:
    (tmp_path / "nvidia" / "cu13" / "lib").mkdir(parents=True)
    (tmp_path / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
    assert cuda_libs.folders([str(tmp_path), str(tmp_path / "none")]) == [
        tmp_path / "nvidia/cu13/lib", tmp_path / "nvidia/cudnn/lib"]
    assert cuda_libs._rank(Path("libcublasLt.so.13")) < cuda_libs._rank(Path("libcublas.so.13"))


# --- apace doctor ------------------------------------------------------------------------------


def test_doctor_tells_a_cuda_build_from_a_cpu_build() -> None:
    from app.cli.doctor_gpu import build_check

    assert build_check("cuda", True, gpu_present=True).detail == \
        "CUDA build of llama-cpp-python (llama_supports_gpu_offload: yes)"
    cpu = build_check("cpu", None, gpu_present=True)
    assert (cpu.status, cpu.detail) == ("warn", "CPU build of llama-cpp-python on a box with a GPU")
    assert "make gpu" in cpu.fix
    assert build_check("cpu", False, gpu_present=False).status == "ok"
    no_driver = build_check("cuda", None, gpu_present=False)
    assert no_driver.status == "ok" and "does not load here" in no_driver.detail
    assert build_check("cuda", False, gpu_present=True).status == "fail"
    assert build_check("missing", None, gpu_present=False).status == "fail"


def test_doctor_reports_the_device_its_memory_and_what_the_gpu_tiers_need() -> None:
    from app.cli.doctor_gpu import gpu_checks, need_mb

    checks = gpu_checks(plan(FakeProbe()), "cuda", True)
    names = [check.name for check in checks]
    assert names == ["llm build", "gpu", "tier qwen2.5-coder-1.5b", "tier qwen2.5-7b"]
    assert checks[1].detail == ("NVIDIA H200, 140 GiB (140 GiB free), driver 580.95.05, "
                                "compute 9.0: serving on CUDA, 16 LLM sequences")
    assert all(check.status == "ok" for check in checks)
    assert need_mb("qwen2.5-7b", "whisper-large-v3-turbo", 16) > \
        need_mb("qwen2.5-coder-1.5b", "whisper-large-v3-turbo", 16) > 4_000


def test_doctor_warns_when_a_tier_does_not_fit_and_when_the_gpu_is_unused() -> None:
    from app.cli.doctor_gpu import gpu_checks

    small = Gpu(name="NVIDIA T4", memory_mb=6_000, free_mb=6_000, driver="535.1")
    checks = {c.name: c for c in gpu_checks(plan(FakeProbe(devices=[small], driver=12_020)),
                                            "cuda", None)}
    assert checks["gpu"].status == "warn" and "supports CUDA 12.2" in checks["gpu"].detail
    assert checks["tier qwen2.5-7b"].status == "warn"
    assert [c.name for c in gpu_checks(plan(FakeProbe(devices=[])), "cpu", False)] == [
        "llm build", "gpu"]


def test_make_run_on_cuda_pulls_and_serves_the_gpu_tiers() -> None:
    import re

    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    gpu_part = makefile.split("ifneq ($(APACE_DEVICE),cuda)")[1].split("else")[1].split("endif")[0]
    found = dict(re.findall(r"^(APACE_\w+) \?= (\S+)$", gpu_part, flags=re.M))
    assert found == {"APACE_LLM": PREFERRED_GPU["llm"][0], "APACE_ASR": PREFERRED_GPU["asr"][0]}


def test_cuda_libraries_load_once_each_a_dependant_after_its_dependency(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two stand-in libraries in nvidia/cudnn/lib, the first by name needing the second: the
    loader cannot find the second by itself (not on its path), so it loads on the retry."""
    import shutil
    import subprocess

    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    lib = tmp_path / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    (tmp_path / "zz.c").write_text("int zz(void) { return 1; }\n")
    (tmp_path / "ops.c").write_text("int zz(void);\nint ops(void) { return zz(); }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libcudnn_zz.so.9", "-o",
                    str(lib / "libcudnn_zz.so.9"), str(tmp_path / "zz.c")], check=True)
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libcudnn_ops.so.9", "-o",
                    str(lib / "libcudnn_ops.so.9"), str(tmp_path / "ops.c"),
                    str(lib / "libcudnn_zz.so.9")], check=True)
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    cuda_libs.preload.cache_clear()
    try:
        assert cuda_libs.preload() == ("libcudnn_zz.so.9", "libcudnn_ops.so.9")
    finally:
        cuda_libs.preload.cache_clear()
