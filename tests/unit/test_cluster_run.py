"""app/cluster/run.py: the `ray start` / `ray stop` command lines of `apace cluster up/down`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from app.cli.errors import UsageError
from app.cluster import run


def test_the_ray_program_is_the_one_beside_apaces_python() -> None:
    """`.venv/bin/python -m app cluster up` works without the venv's bin on PATH."""
    beside = Path(sys.executable).with_name("ray")
    assert beside.exists()  # ray is a dependency, installed into this environment
    assert run.ray_program() == str(beside)
    up = run.up_command(head=True, address=None, node=True, cpus=None)
    assert up[0] == run.stop_command()[0] == str(beside)


def test_a_head_with_a_node_offers_the_apace_node_resource() -> None:
    command = run.up_command(head=True, address=None, node=True, cpus=2, port=6390)
    assert command[1:3] == ["start", "--disable-usage-stats"]
    assert "--head" in command and "--port=6390" in command
    resources = next(c for c in command if c.startswith("--resources="))
    assert json.loads(resources.split("=", 1)[1]) == {run.NODE_RESOURCE: 1}
    worker = run.up_command(head=False, address="10.0.0.2:6379", node=False, cpus=None)
    assert "--address=10.0.0.2:6379" in worker and not any("--resources" in c for c in worker)


def test_a_worker_without_the_heads_address_is_refused() -> None:
    with pytest.raises(ValueError, match="address"):
        run.up_command(head=False, address=None, node=True, cpus=None)


def test_no_ray_program_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="install Ray"):
        run.run_up([str(tmp_path / "no-such-ray"), "start"])
