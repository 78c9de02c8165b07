"""One spoken turn through the real page in headless Chromium, inside a network namespace.

tests/browser/test_page.py runs this as
`unshare --net -- python -m tests.browser.netns_run QUESTION.wav OUT.json SHOT.png`, so the
server and the browser share a namespace holding only `lo`: nothing can leave the machine.
Chromium's fake microphone plays QUESTION.wav from getUserMedia on.

OUT.json is always written: what the test asserts on, or an "error" with the server log and
the browser console, so a failure explains itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, Response, sync_playwright

from app.process import ServerProcess
from models.wav_files import read_wav
from pipeline.audio import speech_end_sample
from pipeline.events import SAMPLE_RATE
from tests.browser.harness import CHROMIUM

# --allow-loopback-in-peer-connection: Chromium gathers no 127.0.0.1 candidate without it,
# and `lo` is the only interface here. The rest keep a headless root Chromium quiet.
CHROMIUM_ARGS = [
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
    "--autoplay-policy=no-user-gesture-required",
    "--allow-loopback-in-peer-connection",
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]

# Page-time stamps the page itself does not keep: when the fake microphone started (it plays
# the WAV from getUserMedia on) and when each data-channel message arrived.
PROBE = """
(() => {
  const probe = { gumCalled: null, gumResolved: null, messages: [], states: [] };
  window.__probe = probe;
  const media = navigator.mediaDevices;
  if (media && media.getUserMedia) {
    const getUserMedia = media.getUserMedia.bind(media);
    media.getUserMedia = async (constraints) => {
      probe.gumCalled = performance.now();
      const stream = await getUserMedia(constraints);
      probe.gumResolved = performance.now();
      listen(stream);
      return stream;
    };
  }
  // When the fake mic's speech starts and ends on the page clock, measured on the track
  // itself (after Chromium's audio processing): the origin of the page's TTFA.
  function listen(stream) {
    const ctx = new AudioContext();
    const analyser = ctx.createAnalyser();
    analyser.fftSize = 512;
    ctx.createMediaStreamSource(stream).connect(analyser);
    const buf = new Float32Array(analyser.fftSize);
    probe.mic = { first: null, last: null, maxRms: 0 };
    setInterval(() => {
      analyser.getFloatTimeDomainData(buf);
      let sum = 0;
      for (let i = 0; i < buf.length; i++) sum += buf[i] * buf[i];
      const rms = Math.sqrt(sum / buf.length);
      probe.mic.maxRms = Math.max(probe.mic.maxRms, rms);
      if (rms > 0.003) {
        const t = performance.now();
        if (probe.mic.first === null) probe.mic.first = t;
        probe.mic.last = t;
      }
    }, 5);
  }
  const createDataChannel = RTCPeerConnection.prototype.createDataChannel;
  RTCPeerConnection.prototype.createDataChannel = function (...args) {
    const pc = this;
    pc.addEventListener("connectionstatechange",
      () => probe.states.push({ state: pc.connectionState, t: performance.now() }));
    const channel = createDataChannel.apply(pc, args);
    channel.addEventListener("message", (ev) => {
      let type = null;
      try {
        const msg = JSON.parse(ev.data);
        type = msg.type === "transcript" && !msg.final ? "partial_transcript" : msg.type;
      } catch (_) { /* not JSON */ }
      probe.messages.push({ type, t: performance.now() });
    });
    return channel;
  };
})();
"""

SNAPSHOT = """
() => {
  const texts = (selector) => [...document.querySelectorAll(selector)].map((e) => e.textContent);
  const notice = document.getElementById("notice");
  return {
    state: window.apace.state,
    transcripts: window.apace.transcripts,
    replies: window.apace.replies,
    turns: window.apace.turns,
    audio: window.apace.audio,
    rttMs: window.apace.rttMs,
    messageTypes: window.apace.messages.map((m) => m.type),
    probe: window.__probe,
    notice: notice.hidden ? "" : notice.textContent,
    userLines: texts("#log .line.user .text"),
    assistantLines: texts("#log .line.assistant .text"),
    metricsLines: texts("#log .metrics"),
  };
}
"""


def lo_up() -> None:
    """Bring up `lo`, the only interface of a fresh network namespace (down at birth)."""
    try:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True, capture_output=True)
        return
    except (OSError, subprocess.CalledProcessError):
        pass
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh22x", b"lo", 0)
        flags = struct.unpack("16sh22x", fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sh22x", b"lo", flags | iff_up))


def drain(server: ServerProcess) -> threading.Thread:
    """Keep reading the server's output into server.log, so a full pipe never blocks it."""
    def read() -> None:
        assert server.proc.stdout is not None
        while chunk := os.read(server.proc.stdout.fileno(), 65536):
            server.log += chunk

    thread = threading.Thread(target=read, name="server-log", daemon=True)
    thread.start()
    return thread


@contextlib.contextmanager
def served_browser(server: Any, wav: Path, result: dict[str, Any]) -> Iterator[Any]:
    """Headless Chromium (Debian's, its microphone playing `wav` once) beside `server`,
    whose output is drained meanwhile. On the way out the browser closes, the server
    stops and its log goes into `result["server_log"]`."""
    reader = drain(server)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True,
                args=[*CHROMIUM_ARGS, f"--use-file-for-fake-audio-capture={wav}%noloop"])
            try:
                yield browser
            finally:
                browser.close()
    finally:
        server.stop()
        reader.join(timeout=5)
        result["server_log"] = server.log.decode(errors="replace")


def wait_until(page: Page, condition: str, timeout: float, what: str) -> None:
    """Poll `condition` (a JS expression) in the page; on timeout say what the page shows."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(f"() => Boolean({condition})"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} after {timeout:.0f} s; the page has "
                               f"{json.dumps(page.evaluate(SNAPSHOT))}")
        time.sleep(0.1)


def note_failure(response: Response, notes: list[str]) -> None:
    if response.status >= 400:
        notes.append(f"http {response.status}: {response.url}")


def sessions_closed(server: ServerProcess, timeout: float) -> int:
    """The server's live session count once it reaches 0, or after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while (sessions := int(server.get("/healthz")["sessions"])) and time.monotonic() < deadline:
        time.sleep(0.2)
    return sessions


def browser_timing(snapshot: dict[str, Any], speech_end_s: float) -> dict[str, float | None]:
    """Latencies on the page clock, from the moment the user stopped speaking.

    That moment is measured on the mic track (`probe.mic.last`, the last loud 5 ms poll);
    `*_estimate` values instead assume the fake mic starts the WAV as getUserMedia resolves.
    """
    probe, onsets = snapshot["probe"], snapshot["audio"]["onsets"]
    mic = probe.get("mic") or {}
    started = probe["gumResolved"]
    speech_end = mic.get("last")
    estimate = started + speech_end_s * 1000 if started is not None else None
    first: dict[str, float] = {}
    for message in probe["messages"]:
        first.setdefault(message["type"], message["t"])
    connected = next((s["t"] for s in probe["states"] if s["state"] == "connected"), None)
    onset = next((t for t in onsets if speech_end is None or t > speech_end), None)

    def since(origin: float | None, t: float | None) -> float | None:
        return None if origin is None or t is None else round(t - origin, 1)

    return {
        "connected_after_mic_ms": since(started, connected),
        "ready_after_mic_ms": since(started, first.get("ready")),
        "mic_speech_start_after_mic_ms": since(started, mic.get("first")),
        "mic_speech_end_minus_estimate_ms": since(estimate, speech_end),
        "speech_started_after_mic_ms": since(started, first.get("speech_started")),
        "final_transcript_after_speech_end_ms": since(speech_end, first.get("transcript")),
        "first_reply_delta_after_speech_end_ms": since(speech_end, first.get("reply_delta")),
        "ttfa_page_ms": since(speech_end, onset),
        "ttfa_page_estimate_ms": since(estimate, onset),
        "onset_after_first_reply_delta_ms": since(first.get("reply_delta"), onset),
        "turn_after_speech_end_ms": since(speech_end, first.get("turn")),
    }


def talk(wav: Path, shot: Path, result: dict[str, Any]) -> None:
    pcm = read_wav(wav)
    speech_end_s = speech_end_sample(pcm) / SAMPLE_RATE
    result["wav_s"], result["speech_end_in_wav_s"] = len(pcm) / SAMPLE_RATE, speech_end_s
    result["speech_start_in_wav_s"] = (len(pcm) - speech_end_sample(pcm[::-1])) / SAMPLE_RATE
    server = ServerProcess("--host", "127.0.0.1", timeout=120)
    result["server_pid"] = server.proc.pid
    with served_browser(server, wav, result) as browser:
        result["chromium"] = browser.version
        page = browser.new_page()
        page.on("console", lambda m: result["console"].append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: result["console"].append(f"pageerror: {e}"))
        page.on("response", lambda r: note_failure(r, result["console"]))
        page.add_init_script(PROBE)
        page.goto(server.url + "/")
        page.click("#talk")
        # Not state === 'listening': under load "ready" and "speech_started" can
        # arrive together, and the state moves on before a poll sees it.
        wait_until(page, "window.apace.messages.some((m) => m.type === 'ready')", 30,
                   "connection")
        wait_until(page, "window.apace.turns.length >= 1", 120, "finished turn")
        wait_until(page, "window.apace.audio.maxRms > 0.01", 20, "audible reply")
        time.sleep(0.5)  # let the meter see the reply's tail
        snapshot = page.evaluate(SNAPSHOT)
        result["page"] = snapshot
        result["browser_timing"] = browser_timing(snapshot, speech_end_s)
        result["api_turns"] = server.get("/api/turns")["turns"]
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot), full_page=True)
        page.click("#talk")  # hang up, so the server closes the session cleanly
        wait_until(page, "window.apace.state === 'closed'", 10, "hang-up")
        result["sessions_after_hangup"] = sessions_closed(server, timeout=10)


Scenario = Callable[[Path, Path, dict[str, Any]], None]


def run(scenario: Scenario) -> int:
    """`python -m RUNNER WAV OUT.json SHOT.png` inside the namespace: bring `lo` up, run
    `scenario(wav, shot, result)`, and always write `result` — with the error, if any."""
    wav, out, shot = map(Path, sys.argv[1:4])

    def terminated(signum: int, frame: object) -> None:
        raise SystemExit(f"terminated by signal {signum}")

    signal.signal(signal.SIGTERM, terminated)
    result: dict[str, Any] = {"error": None, "console": [],
                              "netns": os.readlink("/proc/self/ns/net")}
    started = time.monotonic()
    try:
        lo_up()
        # Not /sys/class/net: sysfs still shows the namespace it was mounted in.
        result["interfaces"] = sorted(name for _, name in socket.if_nameindex())
        scenario(wav, shot, result)
    except BaseException as error:
        result["error"] = f"{type(error).__name__}: {error}\n{traceback.format_exc()}"
        if not isinstance(error, Exception):
            raise
    finally:
        result["elapsed_s"] = round(time.monotonic() - started, 1)
        out.write_text(json.dumps(result, indent=2))
    return 1 if result["error"] else 0


def main() -> int:
    return run(talk)


if __name__ == "__main__":
    sys.exit(main())
