"""Running apace on a Ray cluster: the placement actor, one node actor per apace machine,
and the supervisor that keeps that set current as machines join and die.

A machine is an apace node when it offers the Ray resource `apace_node` (`apace cluster
up` starts Ray with it); its actor is pinned there (node affinity, never moved) and asks
for that resource, so each machine holds at most one. The head may be a node too, or only
run the ingress (docs/cluster.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from app.cluster.listeners import Endpoints, ListenerOptions
from app.cluster.node import NodeServer
from app.cluster.placement import Placement
from app.observe.logs import NODE_LEVEL_ENV, own_level
from app.server import ServerOptions
from pipeline.engine import Engine

log = logging.getLogger(__name__)

NAMESPACE = "apace"
PLACEMENT = "apace-placement"
NODE_RESOURCE = "apace_node"
SYNC_S = 1.0
"""How often the supervisor looks for machines that joined or died."""
START_TIMEOUT_S = 300.0
"""Loading a node's models: a first pull of a big tier is not done here (`apace models
pull` is), so this is loading and warming only."""


def placement_actor() -> Any:
    """The placement book's actor (created once per cluster; later callers get it)."""
    import ray

    actor = ray.remote(num_cpus=0, max_restarts=-1)(Placement)
    return actor.options(name=PLACEMENT, namespace=NAMESPACE, get_if_exists=True).remote()


def existing_placement(timeout_s: float = 5.0) -> Any:
    """The running cluster's placement actor, for `apace cluster drain/status`."""
    import ray

    try:
        return ray.get_actor(PLACEMENT, namespace=NAMESPACE)
    except ValueError:
        raise LookupError("no `apace cluster serve` runs on this Ray cluster") from None


def node_name(info: dict[str, Any]) -> str:
    """A node's apace name: its host and the start of its Ray node id."""
    return f"{info.get('NodeManagerHostname') or 'node'}-{info['NodeID'][:8]}"


class Supervisor:
    """Keeps one started node actor per live `apace_node` machine; `nodes` is what the
    ingress routes to (only started nodes are in it), `endpoints` where each one's
    Realtime and Wyoming listeners are (with `listeners`; else none are opened)."""

    def __init__(self, make_engine: Callable[[], Engine], options: ServerOptions,
                 placement: Any, *, loopback: bool = False,
                 listeners: ListenerOptions | None = None) -> None:
        self.make_engine = make_engine
        self.options = options
        self.placement = placement
        self.loopback = loopback
        self.listeners = listeners
        self.nodes: dict[str, Any] = {}
        self.endpoints: dict[str, Endpoints] = {}
        self._starting: dict[str, asyncio.Task[None]] = {}
        self._ids: dict[str, str] = {}  # name → Ray node id

    async def run(self) -> None:
        while True:
            try:
                await self.sync()
            except Exception:
                log.exception("cluster supervisor: sync failed")
            await asyncio.sleep(SYNC_S)

    async def sync(self) -> None:
        import ray

        alive = {node_name(n): n for n in await asyncio.to_thread(ray.nodes)
                 if n.get("Alive") and n.get("Resources", {}).get(NODE_RESOURCE)}
        for name in [n for n in self.nodes if n not in alive]:
            log.warning("node %s is gone", name)
            self.forget(name)
        for name, info in alive.items():
            if name not in self.nodes and name not in self._starting:
                self._ids[name] = info["NodeID"]
                cpus = max(1, int(info.get("Resources", {}).get("CPU", 1)))
                self._starting[name] = asyncio.create_task(
                    self._start(name, info["NodeID"], cpus, self._listeners_at(info)),
                    name=f"start-{name}")

    def _listeners_at(self, info: dict[str, Any]) -> ListenerOptions | None:
        """The node's listeners bind the address Ray reaches it at (the ingress's way
        there too); every node on one machine (tests): loopback."""
        if self.listeners is None:
            return None
        host = "127.0.0.1" if self.loopback else info.get("NodeManagerAddress") or "127.0.0.1"
        return replace(self.listeners, host=host)

    def forget(self, name: str) -> None:
        """Drop the node's actor (it died, or the ingress found it failing)."""
        self._ids.pop(name, None)
        self.endpoints.pop(name, None)
        actor = self.nodes.pop(name, None)
        if actor is not None:
            import ray

            ray.kill(actor, no_restart=True)

    async def _start(self, name: str, node_id: str, cpus: int,
                     listeners: ListenerOptions | None) -> None:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        actor_class: Any = ray.remote(NodeServer)
        actor: Any = actor_class.options(
            num_cpus=0, resources={NODE_RESOURCE: 1}, max_concurrency=1000,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
            # Ray sets OMP_NUM_THREADS=1 in an actor that asks for no CPU; the node's models
            # take turns on every CPU Ray may schedule there (OpenMP libraries read it).
            # Its log (Ray's worker log files) at the level apace's own loggers have here.
            runtime_env={"env_vars": {"OMP_NUM_THREADS": str(cpus),
                                      NODE_LEVEL_ENV: own_level()}},
        ).remote(name, self.make_engine, self.options, self.placement, loopback=self.loopback,
                  listeners=listeners)
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                endpoints = await actor.start.remote()
        except Exception:
            log.exception("node %s did not start", name)
            ray.kill(actor, no_restart=True)
        else:
            self.endpoints[name] = endpoints
            self.nodes[name] = actor
            log.info("node %s is up", name)
        finally:
            self._starting.pop(name, None)

    async def stop(self) -> None:
        """End every node's conversations and release its models."""
        import ray

        for task in self._starting.values():
            task.cancel()
        stops = [_await(actor.stop.remote()) for actor in self.nodes.values()]
        await asyncio.gather(*stops, return_exceptions=True)
        for actor in self.nodes.values():
            ray.kill(actor, no_restart=True)
        self.nodes.clear()
        self.endpoints.clear()


async def _await(ref: Any) -> Any:
    return await ref
