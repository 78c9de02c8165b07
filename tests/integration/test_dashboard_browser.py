"""The dashboard in headless Chromium, live, while the talk page holds a spoken turn.

The server and Chromium run in a private network namespace holding only `lo`
(dashboard_netns.py). One turn is run for the module; each test checks one thing it
must have produced. The screenshot is kept at artifacts/dashboard/dashboard.png.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.server import REPO

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

CHROMIUM = Path("/usr/bin/chromium")
QUESTION = "What is the capital of France?"
ARTIFACTS = REPO / "artifacts" / "dashboard"
RUN_TIMEOUT_S = 240


def _unshare_problem() -> str | None:
    if shutil.which("unshare") is None:
        return "`unshare` (util-linux) is not installed"
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"`unshare --net` is not permitted here: {probe.stderr.strip()}"
    return None


def _question_wav(folder: Path) -> Path:
    """The question with silence first (the fake mic starts at getUserMedia, before the
    call connects) and after (for the whole reply)."""
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
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/ns/net") == netns:
                    pids.append(int(entry))
            except OSError:  # gone meanwhile, or a kernel thread
                pass
    return pids


def _run(wav: Path, out: Path, shot: Path) -> str:
    child = subprocess.Popen(
        ["unshare", "--net", "--", sys.executable, "-m", "tests.integration.dashboard_netns",
         str(wav), str(out), str(shot)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        return child.communicate(timeout=RUN_TIMEOUT_S)[0]
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGTERM)  # the runner stops its server and browser itself
        try:
            return child.communicate(timeout=30)[0] + f"\n[stopped after {RUN_TIMEOUT_S} s]"
        except subprocess.TimeoutExpired:
            child.kill()
            return child.communicate()[0] + "\n[killed]"


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (Debian package `chromium`)")
    if problem := _unshare_problem():
        pytest.skip(problem)
    folder = tmp_path_factory.mktemp("dashboard")
    out, shot = folder / "result.json", ARTIFACTS / "dashboard.png"
    shot.unlink(missing_ok=True)
    output = _run(_question_wav(folder), out, shot)
    if not out.exists():
        pytest.fail(f"dashboard_netns.py wrote no result:\n{output}")
    found: dict[str, Any] = json.loads(out.read_text())
    found["output"] = output
    found["leftovers"] = _in_namespace(found["netns"])
    for pid in found["leftovers"]:  # only ours can be in this namespace
        os.kill(pid, signal.SIGKILL)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "result.json").write_text(json.dumps(found, indent=2))
    if found["error"]:
        pytest.fail(f"{found['error']}\n--- consoles ---\n" + "\n".join(found["console"])
                    + f"\n--- server log ---\n{found.get('server_log', '')}", pytrace=False)
    yield found


def _turn(result: dict[str, Any]) -> dict[str, Any]:
    assert len(result["api_turns"]) == 1, result["api_turns"]
    return dict(result["api_turns"][0])


def test_dashboard_shows_the_turn_with_the_numbers_of_api_turns(result: dict[str, Any]) -> None:
    turn = _turn(result)
    cards = result["dashboard"]["cards"]
    assert [card["key"] for card in cards] == [f"{turn['session']}:{turn['turn']}"]
    numbers = cards[0]["numbers"]
    assert set(numbers) == set(turn["timeline_ms"])
    for name, ms in turn["timeline_ms"].items():
        assert numbers[name]["ms"] == ms, name
        assert numbers[name]["text"] == f"{math.floor(ms + 0.5)} ms", name  # JS Math.round
    assert turn["transcript"] in cards[0]["head"]


def test_dashboard_waterfall_draws_every_stage_of_the_turn(result: dict[str, Any]) -> None:
    turn = _turn(result)
    bars = result["dashboard"]["cards"][0]["bars"]
    assert [bar["name"] for bar in bars] == [stage["name"] for stage in turn["waterfall"]]
    assert all(bar["width"] > 0 for bar in bars)
    assert turn["waterfall"][-1]["end_ms"] == max(turn["timeline_ms"].values())


def test_browser_ttfa_is_reported_and_plausible(result: dict[str, Any]) -> None:
    timeline = _turn(result)["timeline_ms"]
    assert "ttfa_browser" in timeline, timeline
    # Heard after it was sent; within a second of it (network, jitter buffer, playout).
    assert timeline["ttfa_server"] <= timeline["ttfa_browser"] <= timeline["ttfa_server"] + 1000
    talk = result["talk"]
    assert talk["clock"] is not None and talk["clock"]["rttMs"] < 100, talk["clock"]
    assert talk["reported"], "the page sent no audio_onset"
    # The server read its clock halfway through the round trip: at 1005 ms page time.
    assert talk["estimate"]["rttMs"] == 10
    assert talk["estimate"]["offsetS"] == pytest.approx(50 - 1.005)
    # The turn event the page got carries the same stamp.
    assert talk["turns"][0]["timeline_ms"]["ttfa_browser"] == timeline["ttfa_browser"]


def test_metrics_count_the_browser_ttfa(result: dict[str, Any]) -> None:
    counts = {(sample.name, tuple(sample.labels.items())): sample.value
              for family in text_string_to_metric_families(result["metrics"])
              for sample in family.samples}
    assert counts[("apace_ttfa_seconds_count", (("where", "browser"),))] == 1
    assert counts[("apace_ttfa_seconds_count", (("where", "server"),))] == 1


def test_tiles_show_the_rolling_statistics(result: dict[str, Any]) -> None:
    tiles = result["dashboard"]["tiles"]
    ttfa = math.floor(_turn(result)["timeline_ms"]["ttfa_browser"] + 0.5)
    assert f"{ttfa}" in tiles["tile-ttfa_browser"] and "n=1" in tiles["tile-ttfa_browser"]
    assert "of 1 turns" in tiles["tile-slo"]
    assert result["api_stats"]["slo"]["count"] == 1


def test_screenshot_is_saved(result: dict[str, Any]) -> None:
    assert (ARTIFACTS / "dashboard.png").stat().st_size > 10_000


def test_nothing_is_left_running(result: dict[str, Any]) -> None:
    assert result["leftovers"] == []
    assert result["interfaces"] == ["lo"]
