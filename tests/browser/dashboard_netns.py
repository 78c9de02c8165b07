"""One spoken turn on the talk page while the dashboard watches, in headless Chromium,
inside a network namespace holding only `lo`.

tests/browser/test_dashboard_browser.py runs this as
`unshare --net -- python -m tests.browser.dashboard_netns QUESTION.wav OUT.json SHOT.png`.
It reuses the talk-page harness of tests/browser/netns_run.py (Chromium flags, `lo`, log
draining, polling). OUT.json is always written: what the test asserts on, or an "error"
with the server log and both pages' consoles.
"""

from __future__ import annotations

import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, Response

from app.process import ServerProcess
from tests.browser.netns_run import run, served_browser, wait_until

# What the dashboard shows, read from the DOM (what a person sees), per turn card.
DASHBOARD = """
() => ({
  feed: window.dashboard.state.feed,
  visibility: document.visibilityState,
  cards: [...document.querySelectorAll(".turn-card")].map((card) => ({
    key: card.dataset.key,
    head: card.querySelector(".turn-head").textContent,
    numbers: Object.fromEntries([...card.querySelectorAll("[data-metric]")].map((li) =>
      [li.dataset.metric, { ms: Number(li.dataset.ms), text: li.querySelector("b").textContent }])),
    bars: [...card.querySelectorAll("g.stage")].map((g) => ({
      name: g.dataset.stage, width: Number(g.querySelector("rect").getAttribute("width")) })),
  })),
  tiles: Object.fromEntries([...document.querySelectorAll(".tile")].map((tile) =>
    [tile.id, tile.innerText.replace(/\\s+/g, " ").trim()])),
})
"""

TALK = """
() => ({
  state: window.apace.state,
  visibility: document.visibilityState,
  turns: window.apace.turns,
  onsets: window.apace.audio.onsets,
  reported: window.apace.audio.reported,
  clock: window.apace.clock,
  // The page's own arithmetic on a known ping: sent at 1000 ms, back at 1010 ms, stamped
  // 50 s on the server's clock.
  estimate: window.apace.clockEstimate(1000, 1010, 50),
  maxRms: window.apace.audio.maxRms,
})
"""

HEARD = ("window.dashboard.turns().some((t) => t.timeline_ms.ttfa_browser != null) && "
         "document.querySelector('[data-metric=ttfa_browser]') !== null")


def _log_page(page: Page, name: str, console: list[str]) -> None:
    def failed(response: Response) -> None:
        if response.status >= 400:
            console.append(f"{name} http {response.status}: {response.url}")

    page.on("console", lambda m: console.append(f"{name} {m.type}: {m.text}"))
    page.on("pageerror", lambda e: console.append(f"{name} pageerror: {e}"))
    page.on("response", failed)


def watch(wav: Path, shot: Path, result: dict[str, Any]) -> None:
    server = ServerProcess("--host", "127.0.0.1")
    result["server_pid"] = server.proc.pid
    with served_browser(server, wav, result) as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        dashboard, talk = context.new_page(), context.new_page()
        _log_page(dashboard, "dashboard", result["console"])
        _log_page(talk, "talk", result["console"])
        dashboard.goto(server.url + "/dashboard")
        wait_until(dashboard, "window.dashboard.state.feed === 'live'", 10, "live feed")
        talk.bring_to_front()  # a background tab's timers would blur the onset time
        talk.goto(server.url + "/")
        talk.click("#talk")
        wait_until(talk, "window.apace.state === 'listening'", 20, "connection")
        wait_until(talk, "window.apace.turns.length >= 1", 120, "finished turn")
        wait_until(dashboard, HEARD, 10, "browser TTFA on the dashboard")
        result["talk"] = talk.evaluate(TALK)
        result["api_turns"] = server.get("/api/turns")["turns"]
        result["api_stats"] = server.get("/api/stats")
        with urllib.request.urlopen(server.url + "/metrics", timeout=10) as response:
            result["metrics"] = response.read().decode()
        time.sleep(1.2)  # one stats tick, so the tiles show this turn
        dashboard.bring_to_front()
        result["dashboard"] = dashboard.evaluate(DASHBOARD)
        shot.parent.mkdir(parents=True, exist_ok=True)
        dashboard.screenshot(path=str(shot), full_page=True)
        talk.click("#talk")  # hang up, so the server closes the session cleanly
        wait_until(talk, "window.apace.state === 'closed'", 10, "hang-up")


def main() -> int:
    return run(watch)


if __name__ == "__main__":
    sys.exit(main())
