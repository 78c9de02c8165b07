"""app/cluster/node.py: a node tells the placement book at once when its number of
sessions changes, not only once a second."""

from __future__ import annotations

import asyncio

import pytest

from app.cluster.node import REPORT_S, NodeServer
from app.cluster.placement import NodeReport
from app.server import ServerOptions
from tests.fakes import until
from tests.transports import fake_engine
from tests.unit.test_cluster_ingress import Actor

pytestmark = pytest.mark.timeout(20)


class Book:
    def __init__(self) -> None:
        self.reports: list[NodeReport] = []

    def report(self, report: NodeReport) -> None:
        self.reports.append(report)


async def test_a_session_that_ends_is_reported_at_once() -> None:
    fake = fake_engine()
    book = Book()
    node = NodeServer("a", lambda: fake.engine, ServerOptions(max_sessions=2), Actor(book))
    await node.start()
    try:
        await until(lambda: len(book.reports) >= 1, what="the first report")
        assert node.sessions is not None
        calls = [1]
        node.sessions.others.append(lambda: calls[0])  # a session opens (as a listener's)
        started = asyncio.get_running_loop().time()
        await until(lambda: book.reports[-1].sessions == 1, what="the open session reported")
        calls[0] = 0  # ... and ends
        await until(lambda: book.reports[-1].sessions == 0, what="the end reported")
        assert asyncio.get_running_loop().time() - started < REPORT_S
    finally:
        await node.stop()
        fake.close()
