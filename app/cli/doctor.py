"""`apace doctor`: is this box ready to serve, and if not, what to fix.

Checks, each with a verdict (ok / warn / fail), what was found, and the fix: the CPU's
features against the llama.cpp build, memory (and the low-memory profile), the models
(found, loadable, sha256-verified with --verify), the ports, TLS and the access token for
a LAN bind, and how a browser or Home Assistant reaches the box. Exit status 1 when any
check fails. Every check takes its inputs as arguments (cpuinfo text, a config folder)
so the tests give it any machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from models.choice import Choice
    from models.locate import Located

Status = Literal["ok", "warn", "fail"]
LOW_MEMORY_GB = 6.0
"""Below this much RAM the low-memory profile (deploy/low-memory.env) is advised."""
MIN_MEMORY_GB = 3.0
LLAMA_FEATURES = {"avx": "avx", "avx2": "avx2", "fma": "fma", "f16c": "f16c",
                  "avx512": "avx512f", "avx512_vnni": "avx512_vnni",
                  "avx512_vbmi": "avx512vbmi", "avx512_bf16": "avx512_bf16",
                  "amx_int8": "amx_int8", "dotprod": "asimddp", "matmul_int8": "i8mm",
                  "sve": "sve"}
"""llama.cpp's system-info names → the /proc/cpuinfo flag each needs."""


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""


def cpu_flags(cpuinfo: str) -> set[str]:
    """The feature flags in /proc/cpuinfo text (x86 `flags`, Arm `Features`)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def cpu_checks(cpuinfo: str, machine: str, cores: int, llama_info: str | None) -> list[Check]:
    flags = cpu_flags(cpuinfo)
    checks = []
    if machine in ("x86_64", "amd64"):
        missing = sorted({"avx2", "fma", "f16c"} - flags)
        checks.append(Check("cpu", "ok", "x86-64 with AVX2/FMA/F16C") if not missing else Check(
            "cpu", "warn", f"x86-64 without {', '.join(missing)}: llama.cpp runs on slower "
                           "kernels", "rebuild the venv on this box (`make clean-venv venv`): "
                                  ".ci/llama-flags chooses flags this CPU has"))
    elif machine in ("aarch64", "arm64"):
        checks.append(Check("cpu", "ok", "aarch64 with dot-product (armv8.2)") if "asimddp"
                      in flags else Check("cpu", "warn", "aarch64 without dot-product "
                                          "instructions: LLM decoding is about half as fast",
                                          "use the smallest LLM tier (the default) and "
                                          "--max-sessions 1"))
    else:
        checks.append(Check("cpu", "warn", f"{machine}: not a tested architecture"))
    if llama_info is not None:
        built = {part.split("=")[0].split(":")[-1].strip().lower()
                 for part in llama_info.split("|") if part.strip().endswith("= 1")}
        lacking = sorted(name for name in built & LLAMA_FEATURES.keys()
                         if LLAMA_FEATURES[name] not in flags)
        if lacking and flags:
            checks.append(Check("llama.cpp build", "fail", f"built for {', '.join(lacking)}, "
                                "which this CPU lacks: it will crash (illegal instruction)",
                                "rebuild the venv on this box: `make clean-venv venv`"))
        else:
            checks.append(Check("llama.cpp build", "ok", "matches this CPU"))
    if cores < 2:
        checks.append(Check("cores", "warn", f"{cores} core: replies will be slow",
                            "give the box (or container) at least 2 cores"))
    else:
        checks.append(Check("cores", "ok", f"{cores} cores"))
    return checks


def memory_check(meminfo: str) -> Check:
    total_kb = next((int(line.split()[1]) for line in meminfo.splitlines()
                     if line.startswith("MemTotal:")), 0)
    gb = total_kb / 1024 / 1024
    if not total_kb:
        return Check("memory", "warn", "unknown (no /proc/meminfo)")
    if gb < MIN_MEMORY_GB:
        return Check("memory", "fail", f"{gb:.1f} GB: too little for the models",
                     "at least 3 GB, with the low-memory profile (deploy/low-memory.env)")
    if gb < LOW_MEMORY_GB:
        return Check("memory", "warn", f"{gb:.1f} GB", "use the low-memory profile: the "
                     "flags in deploy/low-memory.env (see deploy/README.md)")
    return Check("memory", "ok", f"{gb:.1f} GB")


def model_checks(verify: bool, gpu: bool = False) -> list[Check]:
    """Each model found and usable; pulled tiers size-checked, sha256-checked with verify;
    then what plain `apace serve` serves, as it says at start-up (choice_checks), in the
    GPU order with `gpu`."""
    from models.catalog import TIERS, store_dir
    from models.locate import SPECS, ModelError, locate
    from models.pins import expected
    from models.pull import sha256_of

    checks = []
    located: dict[str, Located] = {}
    for kind, spec in SPECS.items():
        try:
            located[kind] = found = locate(kind, gpu=gpu)
        except ModelError as error:
            checks.append(_failed(f"model {kind}", error, spec.install))
            continue
        checks.append(Check(f"model {kind}", "ok",
                            f"{found.path} ({found.size_bytes / 1e6:.0f} MB, {found.source})"))
    for tier in TIERS.values():
        if tier.embedded:
            continue
        folder = tier.folder(store_dir())
        present = [f for f in tier.files if (folder / f.name).exists()]
        if not present:
            continue
        pins = {f.name: expected(folder, f) or (-1, "") for f in present}
        bad = [f.name for f in present if (folder / f.name).stat().st_size != pins[f.name][0]
               or (verify and sha256_of(folder / f.name) != pins[f.name][1])]
        what = "sha256 verified" if verify else "sizes match (--verify checks sha256)"
        checks.append(Check(f"tier {tier.name}", "fail" if bad else "ok",
                            f"differs from the pinned file: {', '.join(bad)}" if bad else what,
                            f"apace models pull {tier.name}" if bad else ""))
    return [*checks, *choice_checks(located, gpu=gpu)]


def choice_checks(located: dict[str, Located], *, gpu: bool = False) -> list[Check]:
    """The LLM, the ear and the noisy-room ear plain `apace serve` would serve, why, and how
    to change each (models.choice: the lines `apace serve` starts with)."""
    from models.choice import choices

    if "llm" not in located or "asr" not in located:
        return []  # already a failed check
    return [*(_choice_check(choice) for choice in choices(located, gpu=gpu)[:2]),
            noisy_ear_check(located["asr"])]


def noisy_ear_check(ear: Located | None = None) -> Check:
    """Which Whisper hears noisy rooms (`--noisy-asr auto`: models.choice.locate_noisy_asr)."""
    from models.choice import AUTO, NOISY_ASR_ENV, locate_noisy_asr, noisy_choice
    from models.locate import ModelError, locate

    try:
        ear = ear or locate("asr")
        found = locate_noisy_asr(AUTO, ear)
    except ModelError as error:
        return _failed("noisy-room ASR", error, f"--noisy-asr TIER|DIR|off, or mend what names "
                       f"it ({NOISY_ASR_ENV}, noisy_asr in the config file)")
    return _choice_check(noisy_choice(ear, found))


def _failed(name: str, error: Exception, fix: str) -> Check:
    """A failed check from a ModelError: its own "Fix: …" where it says one, else `fix`."""
    detail, _, own = str(error).partition(". Fix: ")
    return Check(name, "fail", detail, own.rstrip(".") or fix)


def _choice_check(choice: Choice) -> Check:
    if choice.model in ("off", "none"):  # noisy rooms heard by the one ear: worse
        return Check(choice.role, "warn", f"{choice.model} ({choice.why})", choice.change)
    return Check(choice.role, "ok", choice.line().removeprefix(f"{choice.role}: "))


def port_check(host: str, port: int, what: str) -> Check:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as error:
            return Check(f"port {port}", "fail", f"{what}: {host}:{port} is not free "
                         f"({error.strerror})", "stop what holds it (another apace?) or "
                         "choose another port")
    return Check(f"port {port}", "ok", f"{what}: {host}:{port} is free")


def access_checks(host: str, config_dir: Path) -> list[Check]:
    from app.security.access import is_loopback
    from app.security.pairing import TOKEN_FILE
    from app.security.tls import certificate_names

    if is_loopback(host):
        return [Check("access", "ok", "loopback: no TLS or token needed (this machine only)")]
    checks = []
    token = config_dir / TOKEN_FILE
    checks.append(Check("token", "ok", f"pairing token in {token}") if token.exists() else
                  Check("token", "warn", "no pairing token yet: `apace serve` makes one and "
                        "prints the pairing link"))
    cert = config_dir / "tls" / "cert.pem"
    names = certificate_names(cert) if cert.exists() else None
    if names is None:
        checks.append(Check("tls", "warn", "no valid certificate yet: browsers refuse the "
                            "microphone on plain http beyond localhost",
                            "serve with --self-signed (or --tls-cert/--tls-key)"))
    else:
        checks.append(Check("tls", "ok", f"certificate for {', '.join(sorted(names)[:4])}"))
    return checks


def reach_hints(host: str, port: int, wyoming_port: int | None, lan: str | None,
                in_container: bool) -> list[Check]:
    from app.security.access import is_loopback, is_wildcard

    address = (lan or "THIS-BOX") if is_wildcard(host) else host
    hints = []
    if is_loopback(host):
        hints.append(Check("browser", "ok", f"open http://localhost:{port}/ on this machine; "
                           "other devices need --host 0.0.0.0 --self-signed"))
    else:
        hints.append(Check("browser", "ok", f"open https://{address}:{port}/ and accept the "
                           "certificate once; pair with the printed link"))
        hints.append(Check("webrtc", "warn" if in_container else "ok",
                           "WebRTC media uses UDP on ephemeral ports" +
                           (" (in a container: run with --network host)" if in_container
                            else ": a firewall must let it through")))
    if wyoming_port is not None:
        hints.append(Check("home assistant", "ok", f"Wyoming Protocol integration: host "
                           f"{address}, port {wyoming_port}"))
    hints.append(Check("realtime", "ok", f"OpenAI Realtime clients: base_url "
                       f"{'http' if is_loopback(host) else 'https'}://{address}:{port}/v1, "
                       "api_key = the pairing token (any on loopback)"))
    return hints


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _llama_info() -> str | None:
    import models  # noqa: F401  (tunes OpenMP before llama.cpp loads: models/openmp.py)

    try:
        import llama_cpp
    except (ImportError, OSError, RuntimeError):  # a CUDA build on a box without the driver
        return None
    info = llama_cpp.llama_print_system_info()
    return info.decode() if isinstance(info, bytes) else str(info)


def run_checks(args: argparse.Namespace) -> list[Check]:
    from app.cli.doctor_gpu import gpu_checks
    from app.security.access import lan_address
    from models.device import SystemProbe, llama_offload, plan
    from models.locate import config_path

    checks = cpu_checks(_read("/proc/cpuinfo"), platform.machine(), os.cpu_count() or 1,
                        _llama_info())
    checks.append(memory_check(_read("/proc/meminfo")))
    probe = SystemProbe()
    device = plan(probe)
    checks += gpu_checks(device, probe.llama_build(), llama_offload())
    checks += model_checks(args.verify, gpu=device.cuda)
    checks.append(port_check(args.host, args.port, "web (page, WebRTC, /v1/realtime)"))
    if args.wyoming_port is not None:
        checks.append(port_check(args.host, args.wyoming_port, "Wyoming"))
    checks += access_checks(args.host, config_path().parent)
    checks += reach_hints(args.host, args.port, args.wyoming_port, lan_address(),
                          Path("/.dockerenv").exists() or bool(os.environ.get("container")))
    return checks


def render(checks: Iterable[Check]) -> str:
    marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
    lines = []
    for check in checks:
        lines.append(f"[{marks[check.status]}] {check.name:<16} {check.detail}")
        if check.fix and check.status != "ok":
            lines.append(f"{'':<24}fix: {check.fix}")
    return "\n".join(lines)


def doctor_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="the address `apace serve` binds")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--wyoming-port", type=int, metavar="PORT",
                        help="also check the Wyoming port (e.g. 10300)")
    parser.add_argument("--verify", action="store_true",
                        help="sha256-check pulled model files (reads them whole)")
    parser.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    """`apace doctor`: print the checks; 1 if any failed."""
    checks = run_checks(args)
    if args.json:
        print(json.dumps([asdict(check) for check in checks], indent=1))
    else:
        print(render(checks))
    failed = sum(check.status == "fail" for check in checks)
    if not args.json:
        print(f"\n{failed} problem(s) to fix" if failed else "\nready")
    return 1 if failed else 0
