"""The `apace cluster` commands: `up` (Ray under the hood), `serve` (ingress, placement,
node actors), `drain` and `status`."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import signal
import ssl
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web

from app.cluster.control import (
    NAMESPACE,
    NODE_RESOURCE,
    Supervisor,
    existing_placement,
    placement_actor,
)
from app.cluster.ingress import Cluster, make_ingress
from app.security.access import AccessPolicy
from app.server import ServerOptions
from pipeline.engine import Engine

log = logging.getLogger(__name__)

RAY_PORT = 6379


def up_command(*, head: bool, address: str | None, node: bool, cpus: int | None,
               port: int = RAY_PORT) -> list[str]:
    """The `ray start` command line for this machine: the head (with or without an apace
    node on it) or a worker joining `address`, every apace machine offering `apace_node`."""
    ray = shutil.which("ray") or "ray"
    command = [ray, "start", "--disable-usage-stats"]
    if head:
        command += ["--head", f"--port={port}", "--include-dashboard=false"]
    else:
        if not address:
            raise ValueError("a worker needs the head's address: --address HEAD_IP:6379")
        command += [f"--address={address}"]
    if node:
        command += [f"--resources={json.dumps({NODE_RESOURCE: 1})}"]
    if cpus is not None:
        command += [f"--num-cpus={cpus}"]
    return command


def stop_command() -> list[str]:
    return [shutil.which("ray") or "ray", "stop"]


def engine_from(settings: Any) -> Engine:
    """A node's models, from the settings `apace cluster serve` was given (on the node)."""
    from app.runtime import build_engine

    return build_engine(settings)[0]


def run_up(command: Sequence[str]) -> int:
    print("apace: " + " ".join(command), flush=True)
    return subprocess.call(list(command))


def connect(address: str | None, env: dict[str, str] | None = None) -> None:
    """Join the Ray cluster at `address` ("auto": the one this machine is part of)."""
    import ray

    runtime_env = {"env_vars": env} if env else None
    ray.init(address=address or "auto", namespace=NAMESPACE, runtime_env=runtime_env,
             logging_level=logging.WARNING, log_to_driver=False)


async def serve_cluster(make_engine: Callable[[], Engine], options: ServerOptions, *,
                        host: str, port: int, tls: ssl.SSLContext | None,
                        access: AccessPolicy | None, loopback: bool,
                        stop: asyncio.Event | None = None,
                        ready: Callable[[Cluster], None] | None = None) -> None:
    """Run the cluster's ingress on host:port until `stop` is set (default: a signal).
    Ray must be connected (`connect`)."""
    placement = placement_actor()
    supervisor = Supervisor(make_engine, options, placement, loopback=loopback)
    cluster = Cluster(placement, supervisor.nodes, retry_after_s=options.retry_after_s,
                      slo_ttfa_ms=options.slo_ttfa_ms, forgotten=supervisor.forget)
    runner = web.AppRunner(make_ingress(cluster, access), handle_signals=False,
                           auto_decompress=False, shutdown_timeout=3.0)
    await runner.setup()
    watcher = asyncio.create_task(supervisor.run(), name="cluster-supervisor")
    try:
        site = web.TCPSite(runner, host, port, ssl_context=tls)
        try:
            await site.start()
        except OSError as error:
            raise ValueError(f"cannot listen on {host}:{port}: {error.strerror}") from None
        print(f"apace cluster ready: {'https' if tls else 'http'}://{host}:{port}/", flush=True)
        if ready is not None:
            ready(cluster)
        await _until(stop)
    finally:
        watcher.cancel()
        await asyncio.wait([watcher])
        await runner.cleanup()
        await supervisor.stop()


async def _until(stop: asyncio.Event | None) -> None:
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def drain(node: str, *, undo: bool = False) -> bool:
    """Stop (or resume) new conversations on `node`; its own go on. False: unknown node."""
    import ray

    return bool(ray.get(existing_placement().drain.remote(node, not undo)))


def status() -> list[dict[str, Any]]:
    import ray

    return list(ray.get(existing_placement().view.remote()))
