"""The real page in headless Chromium: a spoken question in, reply text and audio out.

The server and Chromium run together in a private network namespace holding only `lo`
(netns_run.py); Chromium's fake microphone plays a synthesized question. One turn is run
once for the module; each test below checks one thing it must have produced.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import wer
from tests.integration.server import REPO

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

CHROMIUM = Path("/usr/bin/chromium")
QUESTION = "What is the capital of France?"
ARTIFACTS = REPO / "artifacts" / "browser"
RUN_TIMEOUT_S = 240


def _unshare_problem() -> str | None:
    if shutil.which("unshare") is None:
        return "`unshare` (util-linux) is not installed"
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"`unshare --net` is not permitted here: {probe.stderr.strip()}"
    return None


def _question_wav(folder: Path) -> Path:
    """The question, with 1.5 s of silence first (the fake mic starts at getUserMedia,
    before the call is connected) and enough silence after for the whole reply."""
    from app.utterances import speak
    from models.load import load_synthesizer
    from models.locate import locate
    from pipeline.audio import write_wav
    from pipeline.tts import TtsOptions

    voice = load_synthesizer(locate("tts").path, TtsOptions())
    path = folder / "question.wav"
    write_wav(path, speak(voice, QUESTION, lead_s=1.5, trail_s=4.0))
    return path


def _in_namespace(netns: str) -> list[int]:
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


def _run_in_namespace(wav: Path, out: Path, shot: Path) -> subprocess.CompletedProcess[str]:
    child = subprocess.Popen(
        ["unshare", "--net", "--", sys.executable, "-m", "tests.browser.netns_run",
         str(wav), str(out), str(shot)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        output, _ = child.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGTERM)  # netns_run stops the server and browser itself
        try:
            output, _ = child.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            output, _ = child.communicate()
        output += f"\n[netns_run.py ran past {RUN_TIMEOUT_S} s and was stopped]"
    return subprocess.CompletedProcess(child.args, child.returncode, output)


def _report(result: dict[str, Any]) -> str:
    turn = (result.get("api_turns") or [{}])[0]
    lines = [f"browser turn in {result.get('elapsed_s')} s (Chromium {result.get('chromium')})",
             f"  server timeline ms: {turn.get('timeline_ms')}",
             f"  page clock ms:      {result.get('browser_timing')}"]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def result(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           ) -> Iterator[dict[str, Any]]:
    """Everything netns_run.py saw in one spoken turn, plus `leftovers`: the PIDs that
    were still in its network namespace once it had exited (killed here)."""
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (Debian package `chromium`)")
    if problem := _unshare_problem():
        pytest.skip(problem)
    folder = tmp_path_factory.mktemp("browser")
    out, shot = folder / "result.json", ARTIFACTS / "talk.png"
    shot.unlink(missing_ok=True)
    run = _run_in_namespace(_question_wav(folder), out, shot)
    if not out.exists():
        pytest.fail(f"netns_run.py wrote no result (exit {run.returncode}):\n{run.stdout}")
    found: dict[str, Any] = json.loads(out.read_text())
    found["output"] = run.stdout
    found["leftovers"] = _in_namespace(found["netns"])
    for pid in found["leftovers"]:  # only ours can be in this namespace
        os.kill(pid, signal.SIGKILL)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "result.json").write_text(json.dumps(found, indent=2))
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print("\n" + _report(found))
    yield found


def _completed(result: dict[str, Any]) -> dict[str, Any]:
    """The server's record of the turn, or a failure that says what went wrong."""
    if result["error"]:
        pytest.fail(f"{result['error']}\n--- browser console ---\n" + "\n".join(result["console"])
                    + f"\n--- server log ---\n{result.get('server_log', '')}"
                    + f"\n--- netns_run.py output ---\n{result['output']}", pytrace=False)
    assert len(result["api_turns"]) == 1, result["api_turns"]
    return dict(result["api_turns"][0])


def test_server_and_browser_see_only_loopback(result: dict[str, Any]) -> None:
    assert result.get("interfaces") == ["lo"], result["error"]


def test_server_transcribes_the_question_from_chromiums_microphone(
        result: dict[str, Any]) -> None:
    turn = _completed(result)
    assert wer(QUESTION, turn["transcript"]) <= 0.2, turn["transcript"]
    transcripts = result["page"]["transcripts"]
    assert len(transcripts) == 1, transcripts
    assert wer(QUESTION, transcripts[0]) <= 0.2, transcripts


def test_page_shows_the_servers_reply_text(result: dict[str, Any]) -> None:
    reply = " ".join(_completed(result)["reply"].split())
    shown = [" ".join(text.split()) for text in result["page"]["assistantLines"]]
    assert reply
    assert shown == [reply]
    assert [turn["reply"] for turn in result["page"]["turns"]] == [_completed(result)["reply"]]


def test_reply_audio_with_real_energy_plays_in_the_page(result: dict[str, Any]) -> None:
    _completed(result)
    audio = result["page"]["audio"]
    assert audio["maxRms"] > 0.01, audio
    assert len(audio["onsets"]) >= 1, audio
    assert result["browser_timing"]["ttfa_page_ms"] is not None, result["browser_timing"]
    assert (ARTIFACTS / "talk.png").stat().st_size > 0


def test_hanging_up_closes_the_servers_session(result: dict[str, Any]) -> None:
    _completed(result)
    assert result["sessions_after_hangup"] == 0


def test_nothing_is_left_running_after_the_call(result: dict[str, Any]) -> None:
    """The server and Chromium (and Playwright's driver) were all stopped by PID."""
    assert result["leftovers"] == []
