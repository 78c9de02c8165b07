"""A real apace server (aiohttp + aiortc on loopback) with scripted models and a known reply
delay: no speculation, a fixed 300 ms endpoint, an ASR that takes 200 ms. The bench tests
measure their client-clock TTFA against it (the `synthetic_server` fixture, conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import numpy as np
from aiohttp import web

from app.serve import use_loopback_candidates
from app.server import make_app
from pipeline.conversation_options import ConversationOptions
from pipeline.engine import ClosableResponder, Engine
from pipeline.events import Pcm
from pipeline.listen.vad import VadOptions
from tests.fakes import FakeResponder, FakeTranscriber

ENDPOINT_MS, ASR_MS = 300, 200


class ToneSynthesizer:
    """Speaks every clause as 0.5 s of a 440 Hz tone (a DC 'tone' would not survive Opus)."""

    voice_id = "tone"

    def synthesize(self, text: str) -> Iterator[Pcm]:
        t = np.arange(8000) / 16000
        yield (np.sin(2 * np.pi * 440 * t) * 8000).astype(np.int16)


async def synthetic_server() -> AsyncIterator[str]:
    use_loopback_candidates()
    options = ConversationOptions(vad=VadOptions(endpoint_ms=ENDPOINT_MS), speculate=False,
                                  endpoint=None, partial_interval_s=None)
    engine = Engine(
        FakeTranscriber("What is the capital of France?", delay_s=ASR_MS / 1000),
        ToneSynthesizer(),
        lambda: ClosableResponder(FakeResponder(["Paris is the capital."]), lambda: None),
        options, tts_cache=False, reply_cache=False,
    )
    runner = web.AppRunner(make_app(engine))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()
    engine.close()
