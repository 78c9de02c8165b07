"""The dashboard fits its window: fed live values as long as real ones get (5-digit ms,
long transcripts, a cluster's session names, eight sessions' KV), no card's content is
wider than the card and the page never scrolls sideways, at 1280x800, 1920x1080 and on a
390x844 phone; values keep a readable size.

dashboard_fit_netns.py runs headless Chromium in a network namespace holding only `lo`;
the screenshots are kept at artifacts/dashboard/dashboard-{laptop,desktop,phone}.png.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from app.process import REPO
from tests.browser.dashboard_fit_netns import SIZES
from tests.browser.harness import in_namespace, skip_unless_possible

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

ARTIFACTS = REPO / "artifacts" / "dashboard"


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    skip_unless_possible()
    out = tmp_path_factory.mktemp("fit") / "result.json"
    run = subprocess.run(
        ["unshare", "--net", "--", sys.executable, "-m", "tests.browser.dashboard_fit_netns",
         str(out), str(ARTIFACTS)],
        cwd=REPO, capture_output=True, text=True, timeout=150)
    if not out.exists():
        pytest.fail(f"the runner wrote no result (exit {run.returncode}):\n{run.stdout}"
                    f"{run.stderr}", pytrace=False)
    found: dict[str, Any] = json.loads(out.read_text())
    if found["error"]:
        pytest.fail(found["error"] + "\n".join(found["console"]), pytrace=False)
    found["leftovers"] = in_namespace(found["netns"])
    yield found


@pytest.mark.parametrize("size", list(SIZES))
def test_nothing_in_a_card_reaches_past_it(result: dict[str, Any], size: str) -> None:
    seen = result["sizes"][size]
    assert seen["feed"] == "live" and seen["turnCards"] == 6
    for card in seen["cards"]:
        assert card["scrollWidth"] <= card["clientWidth"], card
        assert card["outside"] == [], card["what"]


@pytest.mark.parametrize("size", list(SIZES))
def test_the_page_never_scrolls_sideways(result: dict[str, Any], size: str) -> None:
    page = result["sizes"][size]["page"]
    assert page["innerWidth"] == SIZES[size][0]
    assert page["scrollWidth"] <= page["innerWidth"], page


@pytest.mark.parametrize("size", list(SIZES))
def test_values_keep_a_readable_size_and_their_whole_text(result: dict[str, Any],
                                                          size: str) -> None:
    seen = result["sizes"][size]
    assert all(font["px"] >= 12 for font in seen["fonts"]), seen["fonts"]
    # Wrapped, not cut: the longest value is all there.
    assert seen["values"]["memory-kv"].count("MiB") == 8


def test_each_size_is_photographed_and_nothing_is_left_running(result: dict[str, Any]) -> None:
    for size in SIZES:
        assert (ARTIFACTS / f"dashboard-{size}.png").stat().st_size > 10_000
    assert result["leftovers"] == []
    assert result["interfaces"] == ["lo"]
