"""The pytest side of a browser scenario: a spoken-question WAV, then a runner module
started inside a private network namespace holding only `lo` (`unshare --net`), whose
JSON result comes back; anything it left in the namespace is killed (only ours can be)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.process import REPO

CHROMIUM = Path("/usr/bin/chromium")
QUESTION = "What is the capital of France?"
RUN_TIMEOUT_S = 240


def skip_unless_possible() -> None:
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (Debian package `chromium`)")
    if shutil.which("unshare") is None:
        pytest.skip("`unshare` (util-linux) is not installed")
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"`unshare --net` is not permitted here: {probe.stderr.strip()}")


def question_wav(folder: Path) -> Path:
    """The question, with 1.5 s of silence first (the fake mic starts at getUserMedia,
    before the call is connected) and enough silence after for the whole reply."""
    from app.bench.utterances import speak
    from models.load import load_synthesizer
    from models.locate import locate
    from models.wav_files import write_wav
    from pipeline.answer.tts import TtsOptions

    voice = load_synthesizer(locate("tts").path, TtsOptions())
    path = folder / "question.wav"
    write_wav(path, speak(voice, QUESTION, lead_s=1.5, trail_s=4.0))
    return path


def in_namespace(netns: str) -> list[int]:
    """PIDs of the processes still inside the network namespace `netns` (net:[inode])."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/ns/net") == netns:
                    pids.append(int(entry))
            except OSError:  # gone meanwhile, or a kernel thread
                pass
    return pids


def run_scenario(module: str, folder: Path, shot: Path, artifacts: Path) -> dict[str, Any]:
    """Run `python -m module WAV OUT.json SHOT.png` in a fresh network namespace; returns
    its result with `output` and `leftovers` (PIDs found and killed afterwards)."""
    out = folder / "result.json"
    shot.unlink(missing_ok=True)
    child = subprocess.Popen(
        ["unshare", "--net", "--", sys.executable, "-m", module,
         str(question_wav(folder)), str(out), str(shot)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        output = child.communicate(timeout=RUN_TIMEOUT_S)[0]
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGTERM)  # the runner stops its server and browser itself
        try:
            output = child.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            child.kill()
            output = child.communicate()[0]
        output += f"\n[{module} ran past {RUN_TIMEOUT_S} s and was stopped]"
    if not out.exists():
        pytest.fail(f"{module} wrote no result (exit {child.returncode}):\n{output}")
    found: dict[str, Any] = json.loads(out.read_text())
    found["output"] = output
    found["leftovers"] = in_namespace(found["netns"])
    for pid in found["leftovers"]:
        os.kill(pid, signal.SIGKILL)
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / "result.json").write_text(json.dumps(found, indent=2))
    return found
