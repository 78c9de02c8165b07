"""`apace doctor` judges machines described by their /proc text, ports and config folder,
and says what to fix."""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

import pytest

from app.cli.doctor import (
    Check,
    access_checks,
    cpu_checks,
    memory_check,
    port_check,
    reach_hints,
    render,
    run,
)

X86 = "flags\t\t: fpu sse sse2 avx fma f16c avx2\n"
X86_NO_AVX2 = "flags\t\t: fpu sse sse2 avx\n"
PI5 = "Features\t: fp asimd fphp asimdhp asimddp\n"
PI4 = "Features\t: fp asimd crc32\n"
LLAMA_AVX2 = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | OPENMP = 1 | "
LLAMA_AVX512 = LLAMA_AVX2 + "AVX512 = 1 | AVX512_VNNI = 1 | "


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {check.name: check for check in checks}


def test_an_avx2_box_with_a_matching_build_is_fine() -> None:
    checks = by_name(cpu_checks(X86, "x86_64", 4, LLAMA_AVX2))
    assert checks["cpu"].status == checks["llama.cpp build"].status == "ok"


def test_a_build_using_instructions_the_cpu_lacks_fails_with_the_fix() -> None:
    check = by_name(cpu_checks(X86, "x86_64", 4, LLAMA_AVX512))["llama.cpp build"]
    assert check.status == "fail" and "avx512" in check.detail and "make clean-venv venv" in check.fix


def test_an_old_x86_and_an_arm_without_dot_product_are_warned_about() -> None:
    assert by_name(cpu_checks(X86_NO_AVX2, "x86_64", 2, None))["cpu"].status == "warn"
    assert by_name(cpu_checks(PI4, "aarch64", 4, None))["cpu"].status == "warn"
    assert by_name(cpu_checks(PI5, "aarch64", 4, "CPU : NEON = 1 | DOTPROD = 1 | "))[
        "llama.cpp build"].status == "ok"
    assert by_name(cpu_checks(X86, "x86_64", 1, None))["cores"].status == "warn"


@pytest.mark.parametrize("kb, status", [(2_000_000, "fail"), (4_000_000, "warn"),
                                        (16_000_000, "ok")])
def test_memory_thresholds_point_at_the_low_memory_profile(kb: int, status: str) -> None:
    check = memory_check(f"MemTotal:       {kb} kB\nMemFree: 1 kB\n")
    assert check.status == status
    if status == "warn":
        assert "low-memory" in check.fix


def test_a_taken_port_fails_and_a_free_one_passes() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        assert port_check("127.0.0.1", port, "web").status == "fail"
    assert port_check("127.0.0.1", port, "web").status == "ok"


def test_a_lan_bind_needs_a_token_and_a_certificate(tmp_path: Path) -> None:
    assert [c.status for c in access_checks("127.0.0.1", tmp_path)] == ["ok"]
    checks = by_name(access_checks("0.0.0.0", tmp_path))
    assert checks["token"].status == "warn" and checks["tls"].status == "warn"
    assert "--self-signed" in checks["tls"].fix
    from app.security.tls import self_signed

    (tmp_path / "token").write_text("t")
    self_signed(tmp_path / "tls", ["192.168.1.5"])
    checks = by_name(access_checks("0.0.0.0", tmp_path))
    assert checks["token"].status == checks["tls"].status == "ok"


def test_reach_hints_name_the_address_ports_and_udp() -> None:
    hints = by_name(reach_hints("0.0.0.0", 8443, 10300, "192.168.1.5", in_container=True))
    assert "https://192.168.1.5:8443/" in hints["browser"].detail
    assert hints["webrtc"].status == "warn" and "--network host" in hints["webrtc"].detail
    assert "port 10300" in hints["home assistant"].detail
    assert "https://192.168.1.5:8443/v1" in hints["realtime"].detail


def test_render_shows_fixes_only_for_problems() -> None:
    text = render([Check("a", "ok", "fine", "never shown"), Check("b", "fail", "bad", "do x")])
    assert "never shown" not in text and "fix: do x" in text and "[FAIL] b" in text


def test_the_command_exits_1_when_something_fails(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        args = argparse.Namespace(host="127.0.0.1", port=held.getsockname()[1],
                                  wyoming_port=None, verify=False, json=False)
        assert run(args) == 1
    assert "problem(s) to fix" in capsys.readouterr().out


def test_the_noisy_room_ear_is_reported_with_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    from app.cli.doctor import noisy_ear_check

    monkeypatch.setenv("APACE_MODELS_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("APACE_NOISY_ASR")
    check = noisy_ear_check()  # not pulled: how to get it
    assert check.status == "warn" and check.fix == "apace models pull whisper-base"
    monkeypatch.setenv("APACE_NOISY_ASR", "off")
    check = noisy_ear_check()  # turned off: who did, and how to turn it on
    assert check.status == "warn" and "off (env APACE_NOISY_ASR)" in check.detail
    assert check.fix.startswith("--noisy-asr TIER|DIR|off, or noisy_asr = ")
    base = tmp_path / "base"
    base.mkdir()
    for name in ("model.bin", "config.json", "tokenizer.json"):
        (base / name).write_text("{}")
    monkeypatch.setenv("APACE_NOISY_ASR", str(base))
    check = noisy_ear_check()
    assert check.status == "ok" and str(base) in check.detail
    monkeypatch.setenv("APACE_NOISY_ASR", str(tmp_path / "gone"))
    assert noisy_ear_check().status == "fail"
