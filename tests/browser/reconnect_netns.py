"""The page calls again when the server ends its call, and not when the user hangs up;
inside a network namespace holding only `lo`.

tests/browser/test_reconnect.py runs this as
`unshare --net -- python -m tests.browser.reconnect_netns QUESTION.wav OUT.json SHOT.png`
against a server whose sessions end at 4 s (`--max-session-age`, scripted models): the
page is told the server is ending the call, places a new one by itself, and is connected
again; the user's own hang-up then leaves it closed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from tests.browser.netns_run import (
    run,
    served_browser,
    sessions_closed,
    wait_until,
)
from tests.fake_server import FakeServer

READY = "window.apace.messages.filter((m) => m.type === 'ready').length"


def reconnect(wav: Path, shot: Path, result: dict[str, Any]) -> None:
    server = FakeServer("--max-session-age", "4")
    with served_browser(server, wav, result) as browser:
        page = browser.new_page()
        page.on("console", lambda m: result["console"].append(f"{m.type}: {m.text}"))
        page.goto(server.url + "/")
        page.click("#talk")
        wait_until(page, f"{READY} >= 1", 30, "first call")
        wait_until(page, "window.apace.state === 'reconnecting'", 15,
                   "the page noticing the server ended the call")
        result["notice_while_reconnecting"] = page.inner_text("#notice")
        wait_until(page, f"{READY} >= 2", 20, "second call placed by the page")
        result["reconnects"] = page.evaluate("window.apace.reconnects")
        result["state_after_reconnect"] = page.evaluate("window.apace.state")
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot))
        page.click("#talk")  # the user hangs up
        result["sessions_after_hangup"] = sessions_closed(server, timeout=10)
        time.sleep(5)  # longer than the session age: nothing calls again
        result["state_after_hangup"] = page.evaluate("window.apace.state")
        result["reconnects_after_hangup"] = page.evaluate("window.apace.reconnects")
        result["sessions_later"] = int(server.get("/healthz")["sessions"])


if __name__ == "__main__":
    sys.exit(run(reconnect))
