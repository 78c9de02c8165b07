"""The `apace cluster` commands: `up` (Ray under the hood), `serve` (ingress, placement,
node actors), `drain` and `status`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from app.cli.errors import UsageError
from app.cluster.control import (
    NAMESPACE,
    NODE_RESOURCE,
    Supervisor,
    existing_placement,
    placement_actor,
)
from app.cluster.ingress import Cluster, make_ingress
from app.cluster.listeners import ListenerOptions
from app.security.access import AccessPolicy
from app.server import ServerOptions
from pipeline.engine import Engine

if TYPE_CHECKING:
    from app.transports.wyoming.info import ProgramNames
    from app.transports.wyoming.server import WyomingOptions

log = logging.getLogger(__name__)

RAY_PORT = 6379


def up_command(*, head: bool, address: str | None, node: bool, cpus: int | None,
               port: int = RAY_PORT) -> list[str]:
    """The `ray start` command line for this machine: the head (with or without an apace
    node on it) or a worker joining `address`, every apace machine offering `apace_node`."""
    command = [ray_program(), "start", "--disable-usage-stats"]
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
    return [ray_program(), "stop"]


def ray_program() -> str:
    """The `ray` command of the environment apace runs in (its bin folder need not be on
    PATH: `.venv/bin/python -m app cluster up`), else the one on PATH."""
    beside = Path(sys.executable).with_name("ray")
    return str(beside) if beside.exists() else (shutil.which("ray") or "ray")


def engine_from(settings: Any) -> Engine:
    """A node's models, from the settings `apace cluster serve` was given (on the node)."""
    from app.runtime import build_engine

    return build_engine(settings)[0]


def names_from(settings: Any, engine: Engine) -> ProgramNames:
    """What the node's Wyoming `info` calls its models (its own files, as on one box)."""
    from app.transports.wyoming.run import program_names

    return program_names(settings, settings.models.resolve(), engine)


def run_up(command: Sequence[str]) -> int:
    print("apace: " + " ".join(command), flush=True)
    try:
        return subprocess.call(list(command))
    except OSError as error:  # no `ray` program at all
        raise UsageError(f"cannot run {command[0]!r} ({error.strerror}): install Ray "
                         "into apace's environment (pip install 'ray>=2.50,<3')") from None


def connect(address: str | None, env: dict[str, str] | None = None) -> None:
    """Join the Ray cluster at `address` ("auto": the one this machine is part of)."""
    import ray

    runtime_env = {"env_vars": env} if env else None
    ray.init(address=address or "auto", namespace=NAMESPACE, runtime_env=runtime_env,
             logging_level=logging.WARNING, log_to_driver=False)


async def serve_cluster(make_engine: Callable[[], Engine], options: ServerOptions, *,
                        host: str, port: int, tls: ssl.SSLContext | None,
                        access: AccessPolicy | None, loopback: bool,
                        wyoming: WyomingOptions | None = None,
                        make_names: Callable[[Engine], ProgramNames] | None = None,
                        zeroconf: str | None = None, stop: asyncio.Event | None = None,
                        ready: Callable[[Cluster], None] | None = None) -> None:
    """Run the cluster's ingress on host:port (and its Wyoming port, with `wyoming`) until
    `stop` is set (default: a signal). Ray must be connected (`connect`)."""
    placement = placement_actor()
    secret = secrets.token_urlsafe(32)  # the node listeners answer only who holds it
    listeners = ListenerOptions(secret=secret, wyoming=wyoming, make_names=make_names)
    supervisor = Supervisor(make_engine, options, placement, loopback=loopback,
                            listeners=listeners)
    cluster = Cluster(placement, supervisor.nodes, retry_after_s=options.retry_after_s,
                      slo_ttfa_ms=options.slo_ttfa_ms, forgotten=supervisor.forget,
                      endpoints=supervisor.endpoints, secret=secret)
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
        async with _wyoming_ingress(cluster, wyoming, zeroconf):
            if ready is not None:
                ready(cluster)
            await _until(stop)
    finally:
        watcher.cancel()
        await asyncio.wait([watcher])
        await runner.cleanup()
        await supervisor.stop()


@contextlib.asynccontextmanager
async def _wyoming_ingress(cluster: Cluster, options: WyomingOptions | None,
                           zeroconf: str | None) -> AsyncIterator[None]:
    """The cluster's Wyoming port while inside (none without `options`), announced on
    the LAN as `zeroconf` when named."""
    if options is None:
        yield
        return
    from app.cluster.wyoming import WyomingIngress
    from app.security.access import is_wildcard, lan_address
    from app.transports.wyoming.zeroconf import announce

    server = WyomingIngress(cluster, options)
    await server.start()
    try:
        print(f"apace cluster wyoming ready: tcp://{options.host}:{server.port}", flush=True)
        async with contextlib.AsyncExitStack() as stack:
            if zeroconf is not None:
                address = (lan_address() or "127.0.0.1") if is_wildcard(options.host) \
                    else options.host
                await stack.enter_async_context(announce(zeroconf, server.port, address))
            yield
    finally:
        await server.close()


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
