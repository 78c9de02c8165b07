from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes import Workers


@pytest.fixture
def workers() -> Iterator[Workers]:
    """Model workers for a test; their threads are stopped afterwards."""
    made = Workers()
    yield made
    made.close()
