"""apace's own log: which loggers are apace's, their format, and a Ray node's log set up
like the process that started it (a node actor is a process of its own)."""

from __future__ import annotations

import logging
import os

OWN_LOGGERS = ("apace", "app", "pipeline", "models")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
NODE_LEVEL_ENV = "APACE_LOG_LEVEL"
"""The level a cluster node logs apace's own records at (the ingress's, passed on)."""


def own_level() -> str:
    """The level apace's own records are logged at in this process ("WARNING", "DEBUG")."""
    return logging.getLevelName(logging.getLogger("app").getEffectiveLevel())


def set_own_level(level: int | str) -> None:
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(level)


def log_like_the_ingress() -> None:
    """In a node's process: records to stderr (Ray's worker log file) in apace's format,
    apace's own at the ingress's level (an unknown level name is ignored)."""
    logging.basicConfig(level=logging.WARNING, format=FORMAT)
    level = os.environ.get(NODE_LEVEL_ENV, "")
    if isinstance(logging.getLevelName(level), int):
        set_own_level(level)
