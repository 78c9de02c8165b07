"""The wheel is the whole product: built from the checkout, installed into a fresh virtual
environment, run from another folder, it serves the page and the dashboard with their
assets, and its commands work (`apace cluster --help`, `doctor`, `models`).

Nothing is downloaded or compiled: the wheel is built without build isolation, installed
with --no-deps from no index, and the new environment reaches the dependencies through a
.pth file naming this environment's site-packages (a plain path line: that folder's own
.pth files, among them the editable install of a checkout, are not processed there)."""

from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.process import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__",
                                     ".*_cache", "artifacts", "tests")


def run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(part) for part in command], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=timeout)
    assert done.returncode == 0, f"{command}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv holding only the wheel built from this checkout (and a path to ours)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"  # a clean copy: a stale build/ in the checkout must not leak in
    shutil.copytree(REPO, source, ignore=NOT_SOURCES)
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
        "-q", "-w", root / "dist", ".", cwd=source, timeout=120)
    wheel = next((root / "dist").glob("apace_voice-*.whl"))
    venv = root / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=root)
    run(sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "--no-deps",
        "--no-index", "-q", wheel, cwd=root, timeout=120)
    site = Path(run(venv / "bin" / "python", "-c",
                    "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                    cwd=root, env=clean_env(root)).stdout.strip())
    (site / "shared-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    yield venv


def clean_env(home: Path) -> dict[str, str]:
    """No path to the checkout, and config, data and models in `home` (an empty store: the
    embedded models are served, whatever this box has pulled)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "APACE_LLM_MODEL", "APACE_NOISY_ASR", "APACE_CONFIG")}
    return {**env, "XDG_CONFIG_HOME": str(home / "config"), "APACE_DATA_DIR": str(home / "data"),
            "APACE_MODELS_DIR": str(home / "models"), "PYTHONUNBUFFERED": "1"}


def test_the_installed_code_is_the_wheels_not_the_checkouts(installed: Path, tmp_path: Path) -> None:
    code = ("import app, models, pipeline, app.cluster, llama_cpp\n"
            "from app.web_dir import WEB_DIR\n"
            "print(app.__file__, models.__file__, pipeline.__file__, WEB_DIR)")
    paths = run(installed / "bin" / "python", "-c", code, cwd=tmp_path,
                env=clean_env(tmp_path)).stdout.split()
    site = installed.resolve()
    assert all(Path(path).resolve().is_relative_to(site) for path in paths), paths
    assert Path(paths[-1]).name == "web" and Path(paths[-1]).parent.name == "app"
    assert not any(Path(path).resolve().is_relative_to(REPO) for path in paths)


def test_the_installed_commands_work_from_another_folder(installed: Path, tmp_path: Path) -> None:
    apace, env = installed / "bin" / "apace", clean_env(tmp_path)
    assert "serve" in run(apace, "cluster", "--help", cwd=tmp_path, env=env).stdout
    models = run(apace, "models", cwd=tmp_path, env=env).stdout
    assert "smollm2-135m" in models and "embedded" in models
    doctor = run(apace, "doctor", "--port", str(free_port()), cwd=tmp_path, env=env).stdout
    assert re.search(r"\] LLM +smollm2-135m \(embedded fallback", doctor), doctor
    assert doctor.rstrip().endswith("ready")


def test_the_installed_server_serves_the_page_the_dashboard_and_their_assets(
    installed: Path, tmp_path: Path
) -> None:
    port = free_port()
    server = subprocess.Popen([installed / "bin" / "apace", "serve", "--loopback", "--port",
                               str(port)], cwd=tmp_path, env=clean_env(tmp_path),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        log = wait_ready(server, timeout=90)
        lines = log.splitlines()
        # First the device it runs on and why (no GPU here), then the models.
        assert lines[0].startswith("apace: device: CPU ("), log
        lines = lines[1:]
        assert lines[0].startswith("apace: LLM: smollm2-135m (embedded fallback"), log
        assert lines[1].startswith("apace: ASR: whisper-tiny.en (the preferred tier"), log
        assert lines[2].startswith("apace: noisy-room ASR: none (whisper-base is not pulled"), log
        assert lines[3] == "apace: loading models ...", log
        base = f"http://127.0.0.1:{port}"
        assets: set[str] = set()
        for page in ("/", "/dashboard", "/pair"):
            html = fetch(base + page).decode()
            assets |= set(re.findall(r'(?:src|href)="(/static/[^"]+)"', html))
        assert {"/static/app.js", "/static/dashboard.js", "/static/style.css"} <= assets
        for asset in sorted(assets):
            assert fetch(base + asset), asset
    finally:
        os.kill(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert server.returncode == 0


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200, url
        return bytes(response.read())


def wait_ready(server: subprocess.Popen[bytes], timeout: float) -> str:
    """The server's output up to its "apace ready" line (failing with it if it never comes)."""
    assert server.stdout is not None
    log = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(server.stdout, selectors.EVENT_READ)
        while b"apace ready" not in log:
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the installed server did not start:\n{log.decode(errors='replace')}")
            if selector.select(timeout=1.0):
                log += os.read(server.stdout.fileno(), 65536)
    return log.decode(errors="replace")
