"""A cluster node's log is set up like the process that started it."""

from __future__ import annotations

import logging

import pytest

from app.observe import logs


@pytest.fixture(autouse=True)
def _restore_levels():
    before = {name: logging.getLogger(name).level for name in logs.OWN_LOGGERS}
    yield
    for name, level in before.items():
        logging.getLogger(name).setLevel(level)


def test_a_node_logs_apaces_records_at_the_level_it_is_given(monkeypatch) -> None:
    logs.set_own_level(logging.WARNING)
    monkeypatch.setenv(logs.NODE_LEVEL_ENV, "INFO")
    logs.log_like_the_ingress()
    assert all(logging.getLogger(name).level == logging.INFO for name in logs.OWN_LOGGERS)
    assert logs.own_level() == "INFO"


def test_an_unknown_level_leaves_the_levels_alone(monkeypatch) -> None:
    logs.set_own_level(logging.WARNING)
    monkeypatch.setenv(logs.NODE_LEVEL_ENV, "LOUD")
    logs.log_like_the_ingress()
    assert logs.own_level() == "WARNING"
