"""Pins for tier files the catalog cannot pin in advance (the GPU tiers: docs/gpu.md).

Such a file is trusted on its first pull: its size and sha256 are recorded beside it, in
`<store>/<tier>/.pins.json`, and from then on every pull, `apace doctor --verify` and the
check that a tier is pulled hold the file to that record, as they hold a catalog-pinned
file to the catalog. A file the catalog pins is never recorded: the catalog wins.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from models.catalog import TierFile

PINS = ".pins.json"


def expected(folder: Path, file: TierFile) -> tuple[int, str] | None:
    """The size and sha256 `file` must have in `folder`: the catalog's, else the recorded
    ones, else None (never pulled here)."""
    if file.size is not None and file.sha256 is not None:
        return file.size, file.sha256
    found = _read(folder).get(file.name)
    if not isinstance(found, dict):
        return None
    size, sha256 = found.get("size"), found.get("sha256")
    if not isinstance(size, int) or not isinstance(sha256, str):
        return None
    return size, sha256


def record(folder: Path, file: TierFile, size: int, sha256: str) -> None:
    """Remember `file`'s first pulled size and sha256 (atomically: a torn write is no pin)."""
    pins = _read(folder)
    pins[file.name] = {"size": size, "sha256": sha256}
    folder.mkdir(parents=True, exist_ok=True)
    temp = folder / (PINS + ".partial")
    temp.write_text(json.dumps(pins, indent=1, sort_keys=True) + "\n")
    os.replace(temp, folder / PINS)


def _read(folder: Path) -> dict[str, object]:
    try:
        data = json.loads((folder / PINS).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
