"""A soak of `apace serve`: conversations, abandoned offers, malformed offers and dashboard
connections over and over, with the server's RSS, fds, tasks and threads sampled.

    python -m tests.integration.soak --minutes 10 [--real] [--out artifacts/soak.json]

Reports the RSS slope (MiB/min, least squares over the second half) and the fd, task and
thread deltas between the settled start and end; exits 1 when the slope or the fd delta
is over its limit. `make soak` runs it for 10 minutes (not in CI). Scripted models by
default (tests.fake_server); --real soaks the real `apace serve`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

from app.process import ServerProcess
from app.serve import use_loopback_candidates
from app.transports.webrtc.client import Client
from pipeline.events import Pcm
from tests.fake_server import FakeServer, settled, voice
from tests.integration.fuzz_offers import malformed_offers
from tests.offers import make_offer

WARM_UP = 0.5
"""The first half of the samples is left out of the slope: the allocator's arenas, caches
and pools fill then (RSS rose ~10 MiB in the first minute of a 3-minute run, then
~1 MiB/min and slowing, with the count of live sessions, tasks and peer connections flat)."""


def slope_per_minute(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value) in value per minute."""
    if len(samples) < 2:
        return 0.0
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_v = sum(v for _, v in samples) / n
    spread = sum((t - mean_t) ** 2 for t, _ in samples)
    if spread == 0:
        return 0.0
    return 60.0 * sum((t - mean_t) * (v - mean_v) for t, v in samples) / spread


async def _conversation(url: str, speech: Pcm) -> None:
    async with Client(url) as client:
        mark = len(client.events)
        await client.say(speech)
        await client.wait_for("turn", after=mark, timeout=60)


async def _abuse(url: str, offer: str, round_: int) -> None:
    """An abandoned offer, a handful of malformed ones, a dashboard that comes and goes."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
        body = json.dumps({"sdp": offer, "type": "offer"}).encode()
        async with http.post(url + "/offer", data=body,
                             headers={"Content-Type": "application/json"}) as response:
            await response.read()
        for case in malformed_offers(offer, 20, seed=round_):
            if case.send == "plain":
                async with http.post(url + "/offer", data=case.body,
                                     headers=case.headers) as response:
                    await response.read()
        async with http.ws_connect(url.replace("http", "ws") + "/ws/dashboard") as ws:
            await ws.receive(timeout=5)


async def _sample(server: ServerProcess, samples: list[dict[str, Any]], started: float,
                  stop: asyncio.Event) -> None:
    while not stop.is_set():
        health = await asyncio.to_thread(server.get, "/healthz")
        samples.append({"t": round(time.monotonic() - started, 1), **health})
        try:
            await asyncio.wait_for(stop.wait(), 5.0)
        except TimeoutError:
            pass


async def soak(server: ServerProcess, speech: Pcm, minutes: float) -> dict[str, Any]:
    offer = await make_offer()
    first = await settled(server)  # type: ignore[arg-type]
    started = time.monotonic()
    samples: list[dict[str, Any]] = []
    stop = asyncio.Event()
    sampler = asyncio.create_task(_sample(server, samples, started, stop))
    rounds = failures = 0
    while time.monotonic() - started < minutes * 60:
        results = await asyncio.gather(_conversation(server.url, speech),
                                       _abuse(server.url, offer, rounds), return_exceptions=True)
        failures += sum(isinstance(result, BaseException) for result in results)
        rounds += 1
    stop.set()
    await sampler
    last = await settled(server, tasks=first["tasks"], within_s=60)  # type: ignore[arg-type]
    steady = samples[int(len(samples) * WARM_UP):]
    return {
        "minutes": round((time.monotonic() - started) / 60, 2), "rounds": rounds,
        "failures": failures,
        "rss_slope_mib_per_min": round(slope_per_minute(
            [(s["t"], s["rss_bytes"] / 2**20) for s in steady]), 3),
        "rss_mib": {"start": round(first["rss_bytes"] / 2**20, 1),
                    "end": round(last["rss_bytes"] / 2**20, 1)},
        "fd_delta": last["fds"] - first["fds"], "task_delta": last["tasks"] - first["tasks"],
        "thread_delta": last["threads"] - first["threads"], "samples": samples,
    }


def _speech(real: bool) -> Pcm:
    if not real:
        return voice()
    from app.bench.utterances import speak
    from models.load import load_synthesizer
    from models.locate import locate
    from pipeline.answer.tts import TtsOptions

    return speak(load_synthesizer(locate("tts").path, TtsOptions()),
                 "What is the capital of France?")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--real", action="store_true", help="the real models")
    parser.add_argument("--out", default="artifacts/soak.json")
    parser.add_argument("--max-slope", type=float, default=1.0, help="MiB/min (default 1)")
    parser.add_argument("--max-fd-delta", type=int, default=4)
    args = parser.parse_args(argv)
    use_loopback_candidates()
    flags = ("--connect-timeout", "5", "--idle-timeout", "5")
    server = ServerProcess(*flags) if args.real else FakeServer(*flags)
    try:
        report = asyncio.run(soak(server, _speech(args.real), args.minutes))
    finally:
        server.stop()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    summary = {k: v for k, v in report.items() if k != "samples"}
    print(json.dumps(summary))
    ok = (report["rss_slope_mib_per_min"] <= args.max_slope
          and report["fd_delta"] <= args.max_fd_delta and not report["failures"])
    print(f"soak {'passed' if ok else 'FAILED'} (limits: {args.max_slope} MiB/min, "
          f"{args.max_fd_delta} fds; report in {args.out})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
