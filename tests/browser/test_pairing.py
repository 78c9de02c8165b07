"""Pairing in headless Chromium: the page is refused until the printed link is opened;
then the browser holds a cookie scripts cannot read, talks and sees the dashboard; a page
of another origin in the same browser cannot open the dashboard feed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.process import REPO
from app.security.access import COOKIE
from tests.browser.harness import run_scenario, skip_unless_possible

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ARTIFACTS = REPO / "artifacts" / "pairing"


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    skip_unless_possible()
    found = run_scenario("tests.browser.pairing_netns", tmp_path_factory.mktemp("pairing"),
                         ARTIFACTS / "paired.png", ARTIFACTS)
    if found["error"]:
        pytest.fail(f"{found['error']}\n--- console ---\n" + "\n".join(found["console"])
                    + f"\n--- server log ---\n{found.get('server_log', '')}", pytrace=False)
    yield found


def test_an_unpaired_page_is_told_to_pair(result: dict[str, Any]) -> None:
    assert "not paired" in result["unpaired_notice"]


def test_the_link_sets_an_httponly_strict_cookie_and_leaves_no_token_in_the_url(
        result: dict[str, Any]) -> None:
    assert "#" not in result["url_after_pairing"] and "pair" not in result["url_after_pairing"]
    cookie = next(c for c in result["cookies"] if c["name"] == COOKIE)
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert COOKIE not in result["cookie_seen_by_scripts"]


def test_a_paired_page_talks_and_sees_the_dashboard(result: dict[str, Any]) -> None:
    assert result["paired_state"] != "error"
    assert result["sessions_after_hangup"] == 0
    assert result["dashboard_feed"] == "live"


def test_another_origin_cannot_open_the_dashboard_feed(result: dict[str, Any]) -> None:
    assert result["cross_origin_socket"] == "refused"


def test_nothing_is_left_in_the_namespace(result: dict[str, Any]) -> None:
    assert result["leftovers"] == []
