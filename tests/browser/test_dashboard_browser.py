"""The dashboard in headless Chromium, live, while the talk page holds a spoken turn.

The server and Chromium run in a private network namespace holding only `lo`
(dashboard_netns.py). One turn is run for the module; each test checks one thing it
must have produced. The screenshot is kept at artifacts/dashboard/dashboard.png.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.process import REPO
from tests.browser.harness import run_scenario, skip_unless_possible

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ARTIFACTS = REPO / "artifacts" / "dashboard"


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    skip_unless_possible()
    found = run_scenario("tests.browser.dashboard_netns",
                         tmp_path_factory.mktemp("dashboard"), ARTIFACTS / "dashboard.png",
                         ARTIFACTS)
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
