"""The llama.cpp build flags per architecture (.ci/llama-flags), for machines described by
their /proc/cpuinfo: portable always, the fast kernels where the CPU has them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / ".ci" / "llama-flags"

X86_AVX2 = "flags\t\t: fpu vme sse sse2 ssse3 fma cx16 sse4_1 sse4_2 avx f16c avx2 bmi2 avx512f\n"
X86_AVX = "flags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx\n"
X86_OLD = "flags\t\t: fpu sse sse2 ssse3\n"
PI5 = ("processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 "
       "crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\n")
GRAVITON1_LIKE = "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics asimddp\n"
PI4 = "Features\t: fp asimd evtstrm crc32 cpuid\n"


def flags(arch: str, cpuinfo: str | None, tmp_path: Path) -> str:
    path = tmp_path / "cpuinfo"
    if cpuinfo is not None:
        path.write_text(cpuinfo)
    result = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, check=True,
                            env={"LLAMA_FLAGS_ARCH": arch, "LLAMA_FLAGS_CPUINFO": str(path),
                                 "PATH": "/usr/bin:/bin"})
    return result.stdout.strip()


@pytest.mark.parametrize("arch, cpuinfo, expected", [
    ("x86_64", X86_AVX2,
     "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"),
    ("x86_64", X86_AVX,
     "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF"),
    ("x86_64", X86_OLD,
     "-DGGML_NATIVE=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF"),
    ("aarch64", PI5, "-DGGML_NATIVE=OFF -DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod+fp16"),
    ("aarch64", GRAVITON1_LIKE, "-DGGML_NATIVE=OFF -DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod"),
    ("aarch64", PI4, "-DGGML_NATIVE=OFF -DGGML_CPU_ARM_ARCH=armv8-a"),
    ("riscv64", "isa\t\t: rv64imafdc\n", "-DGGML_NATIVE=OFF"),
])
def test_each_machine_gets_portable_flags_for_what_it_has(
        arch: str, cpuinfo: str, expected: str, tmp_path: Path) -> None:
    assert flags(arch, cpuinfo, tmp_path) == expected


def test_no_build_is_ever_cpu_tuned(tmp_path: Path) -> None:
    """GGML_NATIVE=ON crashed in llama_decode on the build machines (AMX/AVX-512)."""
    for arch, info in [("x86_64", X86_AVX2), ("aarch64", PI5), ("armv7l", "")]:
        assert "-DGGML_NATIVE=OFF" in flags(arch, info, tmp_path).split()


def test_the_x86_avx2_flags_are_the_ones_the_cached_wheels_are_keyed_on(tmp_path: Path) -> None:
    """Moving the choice into the script must not change today's flags (nor the wheel
    cache key the recipe derives from them: a rebuild would cost ~6 min)."""
    out = flags("x86_64", X86_AVX2, tmp_path)
    key = subprocess.run(["sha256sum"], input=out + "\n", capture_output=True, text=True,
                         check=True).stdout[:12]
    assert key == "b15a72a69852"


def test_an_unreadable_cpuinfo_gives_the_safest_flags(tmp_path: Path) -> None:
    assert flags("x86_64", None, tmp_path).endswith("-DGGML_AVX=OFF -DGGML_AVX2=OFF "
                                                    "-DGGML_FMA=OFF -DGGML_F16C=OFF")
    assert flags("aarch64", None, tmp_path).endswith("armv8-a")


def test_the_recipe_and_the_dockerfile_take_their_flags_from_the_script() -> None:
    recipe = (REPO / ".ci" / "venv-recipe").read_text()
    assert 'LLAMA_CMAKE_ARGS=${APACE_LLAMA_CMAKE_ARGS:-$(bash "$(dirname "$0")/llama-flags")}' \
        in recipe
    assert ".ci/llama-flags" in (REPO / "deploy" / "Dockerfile").read_text()
