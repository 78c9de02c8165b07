from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.fakes import Workers

# One ear unless a test asks for the noisy-room one: whether whisper-base happens to be
# pulled on this box must not change what the suite hears (servers it starts inherit it).
os.environ["APACE_NOISY_ASR"] = "off"
# The embedded LLM unless a test names another: plain `apace serve` takes the best tier
# pulled on this box (models.catalog.PREFERRED), which must not change what the suite runs.
os.environ["APACE_LLM_MODEL"] = "smollm2-135m"


@pytest.fixture
def workers() -> Iterator[Workers]:
    """Model workers for a test; their threads are stopped afterwards."""
    made = Workers()
    yield made
    made.close()
