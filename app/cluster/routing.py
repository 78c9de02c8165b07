"""Placing a new conversation on a node, the same way for every way in (a WebRTC offer, a
Realtime websocket, a Wyoming connection): a slot is held on the node the placement book
chooses, the conversation is tried there, and the hold is settled with the outcome. A
node that fails (its actor died, its listener does not answer) is forgotten and the next
one tried; a node whose own admission refuses is passed over. When none can take it, the
client gets the single box's answer: 503 with `Retry-After` and the reason.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiohttp import web

from app.cluster.listeners import Endpoints
from app.cluster.placement import Refusal
from app.observe import dashboard as dash
from app.security.limits import Refused

log = logging.getLogger(__name__)

ATTEMPTS = 3
"""Nodes a conversation is tried on before the client is told to retry."""
BOOK_TIMEOUT_S = 5.0
"""The placement actor answers in a millisecond; this long means it is being restarted."""

T = TypeVar("T")


@dataclass
class Cluster:
    """What the ingress reaches through Ray: the placement book and the node actors
    (anything whose methods have `.remote(...)` returning an awaitable)."""

    placement: Any
    nodes: Mapping[str, Any]
    """Node name → its actor, kept current by the supervisor (app.cluster.control)."""
    retry_after_s: int = 5
    slo_ttfa_ms: float = 800.0
    hub: dash.Hub = field(default_factory=dash.Hub)
    forgotten: Callable[[str], None] = lambda _node: None
    """Told when the ingress finds a node dead (the supervisor drops its actor)."""
    endpoints: Mapping[str, Endpoints] = field(default_factory=dict)
    """Node name → where its Realtime and Wyoming listeners are (app.cluster.listeners)."""
    secret: str = ""
    """The cluster secret the node listeners ask of the ingress."""


CLUSTER: web.AppKey[Cluster] = web.AppKey("cluster")


class NodeBusy(Exception):
    """The node's own admission refused the conversation (full, draining, loaded):
    another node may take it."""


async def call(method: Any, *args: Any, timeout: float | None = None) -> Any:
    """`actor.method.remote(*args)`, awaited (with a timeout)."""
    result = method.remote(*args)
    if hasattr(result, "__await__"):
        async with asyncio.timeout(timeout):  # not wait_for: it can swallow a cancellation (3.11)
            return await result
    return result


async def place_on(cluster: Cluster, attempt: Callable[[str], Awaitable[tuple[T, bool]]]) -> T:
    """Hold a slot on the node the book chooses and run `attempt(node)`: it returns what
    to answer and whether the conversation now lives there, raises NodeBusy when the node
    refuses, and anything else when the node failed (forgotten; the next one is tried).
    Raises Refused (503, Retry-After) when no node takes it. Cancel-safe: the hold is
    settled as not placed."""
    retry = {"Retry-After": str(cluster.retry_after_s)}
    last = "no node answered"
    tried: list[str] = []
    for _ in range(ATTEMPTS):
        placed = await book(cluster, "reserve", tried)
        if isinstance(placed, Refusal):
            if tried:  # the nodes left refused it, or there are none left
                break
            raise Refused(503, f"cluster {placed.reason}; try again later", retry,
                          kind=placed.kind)
        node, hold = placed
        tried.append(node)
        settled = False
        try:
            result, settled = await attempt(node)
        except NodeBusy as busy:  # its own admission refused: another node may not
            last = str(busy)
            continue
        except Exception as error:  # the actor died (RayActorError), hangs, or is unreachable
            log.warning("node %s failed to take a conversation (%s: %s): forgetting it",
                        node, type(error).__name__, error)
            await forget(cluster, node)
            last = f"node {node} failed"
            continue
        finally:
            await book(cluster, "settle", node, hold, settled)
        return result
    raise Refused(503, f"no node could take the conversation ({last}); try again later",
                  retry, kind="full")


async def book(cluster: Cluster, method: str, *args: Any) -> Any:
    """A call on the placement book; while it is being restarted, 503 with Retry-After."""
    try:
        return await call(getattr(cluster.placement, method), *args, timeout=BOOK_TIMEOUT_S)
    except Exception as error:
        log.warning("placement %s failed: %s", method, type(error).__name__)
        raise Refused(503, "the cluster's placement is restarting; try again shortly",
                      {"Retry-After": str(cluster.retry_after_s)}, kind="none") from None


async def forget(cluster: Cluster, node: str) -> None:
    cluster.forgotten(node)
    await book(cluster, "forget", node)


REPORT_TIMEOUT_S = 1.0
"""How long the end of a piped connection waits for its node's fresh report."""


async def report_now(cluster: Cluster, node: str) -> None:
    """Ask `node` to tell the placement book how it is now: a conversation piped there
    just ended, and its client may call again at once. A node that does not answer in
    time is left to its next report (logged)."""
    actor = cluster.nodes.get(node)
    if actor is None:
        return
    try:
        await call(actor.report_now, timeout=REPORT_TIMEOUT_S)
    except Exception as error:
        log.info("node %s did not report at once (%s)", node, type(error).__name__)
