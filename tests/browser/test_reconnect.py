"""The page places its call again when the server ends it (a drain, a node lost on a
cluster, the session's age), and never after the user's own hang-up."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.process import REPO
from tests.browser.harness import run_scenario, skip_unless_possible

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ARTIFACTS = REPO / "artifacts" / "reconnect"


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    skip_unless_possible()
    found = run_scenario("tests.browser.reconnect_netns", tmp_path_factory.mktemp("reconnect"),
                         ARTIFACTS / "reconnected.png", ARTIFACTS)
    if found["error"]:
        pytest.fail(f"{found['error']}\n--- console ---\n" + "\n".join(found["console"])
                    + f"\n--- server log ---\n{found.get('server_log', '')}", pytrace=False)
    yield found


def test_a_call_the_server_ended_is_placed_again(result: dict[str, Any]) -> None:
    assert "maximum age" in result["notice_while_reconnecting"]
    assert "Calling again" in result["notice_while_reconnecting"]
    assert result["reconnects"] == 1
    assert result["state_after_reconnect"] in ("listening", "hearing you", "thinking",
                                               "speaking")


def test_the_users_hang_up_is_final(result: dict[str, Any]) -> None:
    assert result["sessions_after_hangup"] == 0
    assert result["state_after_hangup"] == "closed"
    assert result["reconnects_after_hangup"] == 1 and result["sessions_later"] == 0


def test_nothing_is_left_in_the_namespace(result: dict[str, Any]) -> None:
    assert result["leftovers"] == []
