"""A process that ends while a model call is in flight exits cleanly (no segfault).

A llama.cpp call still running in a worker thread when C++ static destructors run reads
freed memory; the workers' exit hook lets the call in hand finish first. Without the hook
this scenario crashed 3 times in 6 (exit status 139).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.process import REPO

pytestmark = pytest.mark.integration

SCENARIO = """
import asyncio
from models.load import open_responder
from models.locate import locate
from pipeline.answer.llm import LlmOptions
from pipeline.compute.workers import ModelWorker

async def main():
    worker = ModelWorker("llm")
    responder = await worker.run(open_responder, locate("llm").path, LlmOptions(max_tokens=400))
    async for _ in worker.stream(responder.reply, [], "Tell me a long story about a dragon."):
        break  # the user hung up mid-reply
    worker.close(responder.close, wait=0)  # as a closing conversation does: never blocks

asyncio.run(main())
"""


def test_exiting_mid_reply_exits_cleanly() -> None:
    for _ in range(5):
        done = subprocess.run([sys.executable, "-c", SCENARIO], cwd=REPO, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "Traceback" not in done.stderr, done.stderr[-2000:]
