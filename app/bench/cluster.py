"""What the cluster's ingress adds to connection set-up (`make bench-cluster`).

A one-machine Ray cluster (a head and one apace node, the embedded models) and a
single-box `apace serve` on the same machine; the same SDP offer is answered N times
through the ingress, by the node actor called directly, and by the single box,
interleaved. Then Realtime: a websocket opened through the ingress (placed, then piped
to the node's listener) and straight to the node's listener, and the round trip of one
small command on each (`input_audio_buffer.clear` → `.cleared`): what the ingress's pipe
adds to every message, audio included. Prints the medians and p90s; the differences are
the ingress's cost (HTTP, placement, the pipe) and Ray's (the actor call). No reply is
made: there is nothing to score.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import time
from typing import Any

import aiohttp

from app.cluster.ingress import Cluster
from app.process import REPO, ServerProcess, free_port
from app.server import ServerOptions

OFFER = "\r\n".join([
    "v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0",
    "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 127.0.0.1",
    "a=candidate:1 1 udp 2122260223 127.0.0.1 54321 typ host",
    "a=ice-ufrag:abcd", "a=ice-pwd:abcdefghijklmnopqrstuvwx",
    "a=fingerprint:sha-256 43:FB:EE:74:18:74:EC:D8:C7:D7:6E:C4:B4:80:91:BE:4E:48:17:DF:91:2F:"
    "8A:4D:6E:76:9B:59:7A:CE:40:75", "a=setup:actpass", "a=mid:0", "a=sendrecv", "a=rtcp-mux",
    "a=rtpmap:111 opus/48000/2", ""])


async def _post(http: aiohttp.ClientSession, url: str) -> float:
    started = time.perf_counter()
    async with http.post(f"{url}/offer", json={"sdp": OFFER, "type": "offer"}) as response:
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"{url}: offer refused ({response.status})")
    return (time.perf_counter() - started) * 1000


async def _realtime(http: aiohttp.ClientSession, url: str,
                    headers: dict[str, str]) -> tuple[float, float]:
    """(ms until session.created, ms for one command's round trip) on a new session."""
    started = time.perf_counter()
    async with http.ws_connect(f"{url}/v1/realtime", headers=headers) as ws:
        await _until(ws, "session.created")
        opened = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        await ws.send_json({"type": "input_audio_buffer.clear"})
        await _until(ws, "input_audio_buffer.cleared")
        return opened, (time.perf_counter() - started) * 1000


async def _until(ws: aiohttp.ClientWebSocketResponse, kind: str) -> None:
    async with asyncio.timeout(30):
        async for message in ws:
            if message.type == aiohttp.WSMsgType.TEXT and message.json().get("type") == kind:
                return
    raise RuntimeError(f"the websocket closed before {kind}")


async def _realtime_pairs(http: aiohttp.ClientSession, cluster: Cluster, ingress: str,
                          n: int) -> dict[str, list[float]]:
    """Realtime through the ingress and straight to the node's listener, interleaved."""
    host, port = next(iter(cluster.endpoints.values())).realtime or ("", 0)
    node = f"http://{host}:{port}"
    secret = {"Authorization": f"Bearer {cluster.secret}"}
    times: dict[str, list[float]] = {name: [] for name in (
        "realtime open, ingress", "realtime open, node", "realtime message, ingress",
        "realtime message, node")}
    for i in range(n + 3):
        through = await _realtime(http, ingress, {})
        direct = await _realtime(http, node, secret)
        if i >= 3:
            for name, ms in zip(times, (through[0], direct[0], through[1], direct[1]),
                                strict=True):
                times[name].append(ms)
    return times


async def _measure(n: int) -> dict[str, list[float]]:
    from app.cluster.run import engine_from, serve_cluster
    from app.runtime import Settings
    from app.serve import use_loopback_candidates

    use_loopback_candidates()
    stop, port, ready = asyncio.Event(), free_port(), asyncio.Event()
    holder: dict[str, Cluster] = {}
    options = ServerOptions(max_sessions=4 * n, admit_by_load=False, connect_timeout_s=120)

    def up(cluster: Cluster) -> None:
        holder["cluster"] = cluster
        ready.set()

    serving = asyncio.create_task(serve_cluster(
        functools.partial(engine_from, Settings()), options, host="127.0.0.1", port=port,
        tls=None, access=None, loopback=True, stop=stop, ready=up))
    await ready.wait()
    while not holder["cluster"].nodes:
        await asyncio.sleep(0.2)
    actor: Any = next(iter(holder["cluster"].nodes.values()))
    single = ServerProcess("--max-sessions", str(4 * n), "--no-admission",
                           "--connect-timeout", "120")
    times: dict[str, list[float]] = {"ingress": [], "node actor": [], "single box": []}
    try:
        async with aiohttp.ClientSession() as http:
            for i in range(n + 3):  # the first 3 warm up
                through = await _post(http, f"http://127.0.0.1:{port}")
                started = time.perf_counter()
                await actor.offer.remote({"sdp": OFFER, "type": "offer"})
                direct = (time.perf_counter() - started) * 1000
                box = await _post(http, single.url)
                if i >= 3:
                    for name, ms in zip(times, (through, direct, box), strict=True):
                        times[name].append(ms)
            times.update(await _realtime_pairs(http, holder["cluster"],
                                               f"http://127.0.0.1:{port}", n))
    finally:
        single.stop()
        stop.set()
        await serving
    return times


def main() -> None:
    import ray
    from ray.cluster_utils import Cluster as RayCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=30, help="offers per way (default 30)")
    n = parser.parse_args().n
    small: dict[str, Any] = {"object_store_memory": 100 << 20}
    cluster = RayCluster(initialize_head=True,
                         head_node_args={"num_cpus": 1, "include_dashboard": False, **small})
    cluster.add_node(num_cpus=1, resources={"apace_node": 1}, **small)
    ray.init(address=cluster.address, namespace="apace", log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    try:
        times = asyncio.run(_measure(n))
    finally:
        ray.shutdown()
        cluster.shutdown()  # type: ignore[no-untyped-call]
    for name, values in times.items():
        ordered = sorted(values)
        print(f"{name:>26}: median {statistics.median(values):7.1f} ms, "
              f"p90 {ordered[int(0.9 * len(ordered))]:7.1f} ms (n={len(values)})")
    base = statistics.median(times["single box"])
    print(f"the ingress adds {statistics.median(times['ingress']) - base:+.1f} ms (median) "
          "to answering an offer, against the single box")
    for what in ("open", "message"):
        added = (statistics.median(times[f"realtime {what}, ingress"])
                 - statistics.median(times[f"realtime {what}, node"]))
        print(f"the ingress adds {added:+.1f} ms (median) to a Realtime {what}, against the "
              "node's own listener")


if __name__ == "__main__":
    main()
