"""The real page in headless Chromium: a spoken question in, reply text and audio out.

The server and Chromium run together in a private network namespace holding only `lo`
(netns_run.py); Chromium's fake microphone plays a synthesized question. One turn is run
once for the module; each test below checks one thing it must have produced.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.process import REPO
from tests.browser.harness import QUESTION, run_scenario, skip_unless_possible
from tests.wer import wer

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ARTIFACTS = REPO / "artifacts" / "browser"


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
    skip_unless_possible()
    found = run_scenario("tests.browser.netns_run", tmp_path_factory.mktemp("browser"),
                         ARTIFACTS / "talk.png", ARTIFACTS)
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
