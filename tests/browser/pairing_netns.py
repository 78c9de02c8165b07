"""Pairing in a real browser, inside a network namespace holding only `lo`.

tests/browser/test_pairing.py runs this as
`unshare --net -- python -m tests.browser.pairing_netns QUESTION.wav OUT.json SHOT.png`
against a server that requires pairing (scripted models). OUT.json records what the page
showed before pairing, after opening the printed link, and what a page of another origin
got from the dashboard websocket.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.browser.netns_run import (
    run,
    served_browser,
    sessions_closed,
    wait_until,
)
from tests.fake_server import FakeServer

CROSS_ORIGIN_SOCKET = """
(url) => new Promise((resolve) => {
  const ws = new WebSocket(url);
  ws.onopen = () => { resolve("open"); ws.close(); };
  ws.onerror = () => resolve("refused");
})
"""


def pairing(wav: Path, shot: Path, result: dict[str, Any]) -> None:
    config = Path(tempfile.mkdtemp(prefix="apace-pairing-"))
    server = FakeServer("--require-pairing", env={"XDG_CONFIG_HOME": str(config)})
    with served_browser(server, wav, result) as browser:
        found = re.search(rb"(http://\S+/pair#\S+)", server.log)
        assert found is not None, server.log
        _in_browser(browser.new_context(), server, found.group(1).decode(), shot, result)


def _in_browser(context: Any, server: FakeServer, link: str, shot: Path,
                result: dict[str, Any]) -> None:
    page = context.new_page()
    page.on("console", lambda m: result["console"].append(f"{m.type}: {m.text}"))
    page.goto(server.url + "/")
    page.click("#talk")
    wait_until(page, "window.apace.state === 'error'", 20, "refusal before pairing")
    result["unpaired_notice"] = page.inner_text("#notice")
    page.goto(link)
    page.wait_for_url(server.url + "/", timeout=10_000)
    result["url_after_pairing"] = page.url
    result["cookie_seen_by_scripts"] = page.evaluate("document.cookie")
    result["cookies"] = context.cookies()
    page.click("#talk")
    wait_until(page, "window.apace.messages.some((m) => m.type === 'ready')", 30,
               "connection after pairing")
    result["paired_state"] = page.evaluate("window.apace.state")
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot))
    page.click("#talk")
    result["sessions_after_hangup"] = sessions_closed(server, timeout=10)
    dashboard = context.new_page()
    dashboard.goto(server.url + "/dashboard")
    wait_until(dashboard, "window.dashboard.state.feed === 'live'", 20, "live dashboard feed")
    result["dashboard_feed"] = dashboard.evaluate("window.dashboard.state.feed")
    other = context.new_page()  # same browser, same cookies, another origin
    other.goto(f"http://localhost:{server.port}/")
    result["cross_origin_socket"] = other.evaluate(
        CROSS_ORIGIN_SOCKET, f"ws://127.0.0.1:{server.port}/ws/dashboard")


if __name__ == "__main__":
    sys.exit(run(pairing))
