from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.fakes import Workers

# One ear unless a test asks for the noisy-room one: whether whisper-base happens to be
# pulled on this box must not change what the suite hears (servers it starts inherit it).
os.environ["APACE_NOISY_ASR"] = "off"


@pytest.fixture
def workers() -> Iterator[Workers]:
    """Model workers for a test; their threads are stopped afterwards."""
    made = Workers()
    yield made
    made.close()
