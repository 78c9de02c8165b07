"""Which node takes the next conversation: the cluster's placement book (no Ray in here).

Every node reports each second (`NodeReport`): its open sessions, its hard cap, whether
its own admission (pipeline.compute.admission: predicted TTFA against the SLO) would take one
more, its CPU and its recent TTFA. `Placement.reserve` picks the least-loaded live node
that has room and holds a slot there *before* the offer is forwarded, so two offers
arriving together never take the same slot; `settle` ends the hold (the node's next
report counts the session itself). A node that stops reporting for `DEAD_S` is
forgotten, as is one the ingress saw fail; a drained node gets no new conversations.

Ray runs this class as one named actor (app.cluster.control); the unit tests use it as it
is.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

DEAD_S = 3.0
"""A node silent this long (three missed reports) is taken for dead."""
HOLD_S = 15.0
"""A reservation not settled within this long is released (its ingress died mid-offer)."""


@dataclass(frozen=True)
class NodeReport:
    """What a node says of itself each second."""

    node: str
    sessions: int
    max_sessions: int
    admits: bool = True
    """Its own admission would take one more conversation (load below the SLO)."""
    reason: str = ""
    """Why not, when it would not."""
    cpu: float = 0.0
    """Share of the last seconds its models held the CPU (0-1)."""
    ttfa_p50_ms: float | None = None
    draining: bool = False


@dataclass
class _Node:
    report: NodeReport
    seen: float
    held: dict[int, float] = field(default_factory=dict)
    """Reservations not yet settled: id → when made."""
    drained: bool = False

    @property
    def taken(self) -> int:
        return self.report.sessions + len(self.held)

    @property
    def load(self) -> tuple[float, float]:
        return (self.taken / max(1, self.report.max_sessions), self.report.cpu)


@dataclass(frozen=True)
class Refusal:
    """No node can take a conversation now."""

    reason: str
    kind: str
    """"none" (no live node), "full", "load" or "draining" — as the single box says it."""


@dataclass
class Placement:
    clock: Callable[[], float] = time.monotonic
    nodes: dict[str, _Node] = field(default_factory=dict)
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    def report(self, report: NodeReport) -> None:
        node = self.nodes.get(report.node)
        if node is None:
            self.nodes[report.node] = _Node(report, self.clock())
            return
        node.report, node.seen = report, self.clock()

    def reserve(self, exclude: Sequence[str] = ()) -> tuple[str, int] | Refusal:
        """Hold a slot on the least-loaded live node that has room: (node, hold id).
        `exclude`: nodes this offer was already refused by."""
        self._expire()
        live = [n for n in self.nodes.values() if n.report.node not in exclude]
        if not live:
            return Refusal("no apace node is up", "none")
        open_nodes = [n for n in live if not n.drained and not n.report.draining]
        if not open_nodes:
            return Refusal("every node is draining", "draining")
        roomy = [n for n in open_nodes if n.taken < n.report.max_sessions]
        if not roomy:
            return Refusal(f"every node is full ({sum(n.taken for n in open_nodes)} sessions)",
                           "full")
        # A node's own load verdict counts only for its next conversation: a hold it has
        # not reported on yet is judged by the cap alone.
        willing = [n for n in roomy if n.report.admits or n.held]
        if not willing:
            return Refusal("; ".join(sorted({n.report.reason for n in roomy if n.report.reason}))
                           or "every node is busy", "load")
        chosen = min(willing, key=lambda n: (n.load, n.report.node))
        hold = next(self._ids)
        chosen.held[hold] = self.clock()
        return chosen.report.node, hold

    def settle(self, node: str, hold: int, placed: bool) -> None:
        """The offer held by `hold` was answered (`placed`) or refused: count the
        session until the node's next report does."""
        entry = self.nodes.get(node)
        made = entry.held.pop(hold, None) if entry is not None else None
        if entry is None or made is None:
            return
        if placed and entry.seen <= made:  # (a report since the hold counts it already)
            r = entry.report
            entry.report = NodeReport(r.node, r.sessions + 1, r.max_sessions, r.admits,
                                      r.reason, r.cpu, r.ttfa_p50_ms, r.draining)

    def drain(self, node: str, drained: bool = True) -> bool:
        """Stop (or resume) placing conversations on `node`; False if it is not known."""
        entry = self.nodes.get(node)
        if entry is None:
            return False
        entry.drained = drained
        return True

    def forget(self, node: str) -> None:
        """The node is gone (its actor died): place nothing more there."""
        self.nodes.pop(node, None)

    def view(self) -> list[dict[str, Any]]:
        """Every live node, as the dashboard and `apace cluster status` show it."""
        self._expire()
        return [{**n.report.__dict__, "held": len(n.held), "drained": n.drained,
                 "seen_s_ago": round(self.clock() - n.seen, 2)}
                for n in sorted(self.nodes.values(), key=lambda n: n.report.node)]

    def _expire(self) -> None:
        now = self.clock()
        for name, node in list(self.nodes.items()):
            if now - node.seen > DEAD_S:
                del self.nodes[name]
                continue
            for hold, made in list(node.held.items()):
                if made + HOLD_S < now:
                    del node.held[hold]
