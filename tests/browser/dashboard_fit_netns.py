"""The dashboard at three window sizes, live, fed values as long as real ones get, in
headless Chromium inside a network namespace holding only `lo`.

tests/browser/test_dashboard_fit.py runs this as
`unshare --net -- python -m tests.browser.dashboard_fit_netns OUT.json SHOTS_DIR`. No server
runs: Playwright answers the page's requests — web/'s own files, /api/turns, /api/stats —
and plays the server's side of /ws/dashboard. The turns are made by the server's own
`app.observe.dashboard.turn_record` from real `Turn`s, the statistics by `app.observe.metrics` and
`EngineStats`, so the shapes are the feed's; only the values are stretched: 5-digit ms,
long transcripts and replies, a cluster's session names, every quality tag at once, the
longest memory line. OUT.json is always written: per size, what overflowed (if anything).
"""

from __future__ import annotations

import json
import mimetypes
import os
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from playwright.sync_api import Route, WebSocketRoute, sync_playwright

from app.observe import dashboard as dash
from app.observe.metrics import latency_summary
from pipeline.compute.stats import EngineStats
from pipeline.conversation_events import Turn
from pipeline.timeline import METRICS, SPEECH_END, Timeline
from tests.browser.harness import CHROMIUM
from tests.browser.netns_run import lo_up

WEB_DIR = Path(__file__).resolve().parents[2] / "web"
ORIGIN = "http://127.0.0.1:8080"
SIZES = {"laptop": (1280, 800), "desktop": (1920, 1080), "phone": (390, 844)}
SLO_MS = 800.0
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]

TRANSCRIPTS = [
    "Could you please tell me how many tablespoons there are in three and a half cups of "
    "all-purpose flour, and then what that comes to in grams for my grandmother's recipe?",
    "Set a timer called pasta-water-for-the-big-family-dinner-on-sunday for twelve minutes",
    "Add extra-virgin-olive-oil, sun-dried tomatoes and https://example.com/a/very/long/"
    "shopping/list/link/that/someone/dictated/without/any/spaces to the shopping list",
]
REPLY = ("Three and a half cups of all-purpose flour is fifty-six tablespoons, which is about "
         "four hundred and thirty-eight grams. Sift it first so it measures true, and weigh "
         "it if you can: a kitchen scale is far more reliable than a cup.")


def turns() -> list[dict[str, Any]]:
    """Turn records as the server makes them, with every stamp in the tens of seconds."""
    records = []
    for index, transcript in enumerate(TRANSCRIPTS * 2, start=1):
        stamps = {SPEECH_END: 0.0}
        for step, name in enumerate(METRICS, start=1):
            stamps[name] = (10_000 + 12_345.6 * step + 731.3 * index) / 1000
        quality = {"ok": index % 2 == 0, "repeat": True, "echo": True, "sentences": 12,
                   "refusal": True, "spoken_s": 98.7}
        turn = Turn(index, transcript, REPLY, REPLY, index % 3 == 0,
                    Timeline(index, stamps), skill="convert" if index % 2 else "list",
                    quality=quality)
        session = f"gpu-node-with-a-long-hostname-07:sess_{index:020x}"
        records.append(dash.turn_record(session, turn))
    return records


def stats(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The stats message of a busy shared-LLM server, long-lived: big counters, eight
    sessions holding KV."""
    engine = EngineStats(turns=123_456, barge_ins=98_765, llm_tokens=12_345_678,
                         llm_seconds=1_234.5)
    engine.speculation.started, engine.speculation.committed = 123_456, 98_765
    engine.speculation.cancelled, engine.speculation.wasted_tokens = 24_691, 9_876_543
    engine.speculation.wasted_ms = 12_345_678.9
    engine.tts_cache.hits, engine.tts_cache.misses = 123_456, 654_321
    engine.reply_cache.hits, engine.reply_cache.misses = 12_345, 987_654
    engine.draft.proposed, engine.draft.accepted = 9_876_543, 1_234_567
    kv = {str(i): 1_234_567_890 + i for i in range(1, 9)}
    return dash.stats_message({
        **latency_summary(records, SLO_MS), "engine": engine.snapshot(),
        "loop_lag_ms": {"last": 12_345.6, "max": 98_765.4}, "sessions": 8, "dashboards": 3,
        "dashboards_dropped": 0, "window": len(records),
        "memory": {"rss_bytes": 123_456_789_012,
                   "llm": {"sequences": 8, "conversations_held": 8, "kv_bytes_per_token": 98_304,
                           "kv_bytes_reserved": 98_765_432_100, "steps": 123_456,
                           "tokens_per_step": 7.654321},
                   "kv_bytes_per_session": kv}})


# Per card (every tile and turn card): its scroll and client widths, and every element in
# it whose visible part reaches past the card's box, by how many pixels (an ellipsized
# line's words are clipped by it, so only the line itself counts); the page's own
# overflow; the font size of every value (readable: not shrunk to nothing).
MEASURE = """
() => {
  const path = (e) => e.id ? `#${e.id}` : `${e.tagName.toLowerCase()}.${e.getAttribute("class") || ""}`;
  function visible(e, card) {
    let { left, right, width, height } = e.getBoundingClientRect();
    if (width === 0 && height === 0) return null; // not rendered (an SVG <title>)
    for (let a = e.parentElement; a && a !== card; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== "visible") {
        const clip = a.getBoundingClientRect();
        left = Math.max(left, clip.left);
        right = Math.min(right, clip.right);
      }
    }
    return right > left ? { left, right } : null;
  }
  const cards = [...document.querySelectorAll(".tile, .turn-card")];
  return {
    feed: window.dashboard.state.feed,
    turnCards: document.querySelectorAll(".turn-card").length,
    page: { scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth },
    cards: cards.map((card) => {
      const box = card.getBoundingClientRect();
      const outside = [...card.querySelectorAll("*")].map((e) => {
        const r = visible(e, card);
        return r && { what: path(e), left: box.left - r.left, right: r.right - box.right,
                      text: (e.textContent || "").slice(0, 60) };
      }).filter((o) => o && (o.left > 0.5 || o.right > 0.5));
      return { what: card.id || card.dataset.key, scrollWidth: card.scrollWidth,
               clientWidth: card.clientWidth, outside };
    }),
    fonts: [...document.querySelectorAll(".pct .v, dd, .big, .numbers b, .turn-head")].map(
      (e) => ({ what: path(e), px: parseFloat(getComputedStyle(e).fontSize) })),
    values: Object.fromEntries([...document.querySelectorAll("dd")].map((e) => [e.id, e.textContent])),
  };
}
"""


def serve(route: Route, records: list[dict[str, Any]], message: dict[str, Any]) -> None:
    """Answer one request of the page: a file of web/, or the server's JSON."""
    path = route.request.url.removeprefix(ORIGIN).split("?")[0]
    if path == "/api/turns":
        route.fulfill(json={"turns": records})
    elif path == "/api/stats":
        route.fulfill(json={k: v for k, v in message.items() if k != "type"})
    elif path in ("/dashboard", "/") or path.startswith("/static/"):
        name = "dashboard.html" if path == "/dashboard" else path.removeprefix("/static/")
        file = WEB_DIR / name
        if file.is_file():
            route.fulfill(body=file.read_bytes(),
                          content_type=mimetypes.guess_type(file.name)[0] or "text/plain")
        else:
            route.fulfill(status=404, body="no such file")
    else:
        route.fulfill(status=404, body="not served here")


def look(shots: Path, result: dict[str, Any]) -> None:
    records = turns()
    message = stats(records)

    def feed(ws: WebSocketRoute) -> None:  # the server's side of /ws/dashboard
        ws.send(json.dumps(message))
        for record in records:
            ws.send(json.dumps({**record, "type": "turn"}))

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=CHROMIUM_ARGS)
        try:
            for name, (width, height) in SIZES.items():
                page = browser.new_page(viewport={"width": width, "height": height})
                page.on("console", lambda m: result["console"].append(f"{m.type}: {m.text}"))
                page.on("pageerror", lambda e: result["console"].append(f"pageerror: {e}"))
                page.route("**/*", lambda route: serve(route, records, message))
                page.route_web_socket("**/ws/dashboard", feed)
                page.goto(ORIGIN + "/dashboard")
                page.wait_for_function(
                    f"window.dashboard.state.feed === 'live' && "
                    f"document.querySelectorAll('.turn-card').length === {len(records)} && "
                    f"document.getElementById('memory-kv').textContent.includes('#8')",
                    timeout=10_000)
                result["sizes"][name] = page.evaluate(MEASURE)
                page.screenshot(path=str(shots / f"dashboard-{name}.png"), full_page=True)
                page.close()
        finally:
            browser.close()


def main() -> int:
    out, shots = Path(sys.argv[1]), Path(sys.argv[2])
    shots.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"error": None, "console": [], "sizes": {},
                              "netns": os.readlink("/proc/self/ns/net")}
    started = time.monotonic()
    try:
        lo_up()
        result["interfaces"] = sorted(name for _, name in socket.if_nameindex())
        look(shots, result)
    except Exception as error:
        result["error"] = f"{type(error).__name__}: {error}\n{traceback.format_exc()}"
    finally:
        result["elapsed_s"] = round(time.monotonic() - started, 1)
        out.write_text(json.dumps(result, indent=2))
    return 1 if result["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
