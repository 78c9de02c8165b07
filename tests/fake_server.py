"""`apace serve` with scripted models, for tests where the models do not matter (access,
hostile input, lifecycle, drain): the real command line, server and WebRTC, started in a
second and light on the CPU.

Run as `python -m tests.fake_server [serve flags]`; `FakeServer(...)` starts it
as a child process on a free loopback port. The user is `voice()`: a synthetic voiced
signal that webrtcvad hears as speech. Every question is heard as TRANSCRIPT and answered
with REPLY, spoken as a tone of 100 ms per word (about 2.4 s).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from app.process import REPO, ServerProcess, free_port
from pipeline.conversation_options import ConversationOptions
from pipeline.engine import ClosableResponder, Engine
from pipeline.events import SAMPLE_RATE, Pcm
from pipeline.listen.vad import VadOptions
from tests.fakes import FakeResponder

TRANSCRIPT = "Tell me a long story."
REPLY = ("Once upon a time a small brave cat walked all the way across the quiet town and "
         "found a warm place to sleep by the old bakery door tonight.")
WORD_S = 0.1


class Hears:
    """Hears every utterance as TRANSCRIPT."""

    def transcribe(self, pcm: Pcm, context: str = "", *, vocabulary: str | None = None) -> str:
        return TRANSCRIPT


class WordTones:
    """Speaks each word as WORD_S of a 440 Hz tone (a DC 'tone' would not survive Opus)."""

    voice_id = "tones"

    def synthesize(self, text: str) -> Iterator[Pcm]:
        t = np.arange(int(SAMPLE_RATE * WORD_S)) / SAMPLE_RATE
        for _ in text.split():
            yield (np.sin(2 * np.pi * 440 * t) * 8000).astype(np.int16)


def fake_engine() -> Engine:
    options = ConversationOptions(vad=VadOptions(endpoint_ms=300), speculate=False,
                                  endpoint=None, partial_interval_s=None)
    pieces = [word + " " for word in REPLY.split()]
    return Engine(Hears(), WordTones(),
                  lambda: ClosableResponder(FakeResponder(pieces, delay_s=0.01), lambda: None),
                  options, tts_cache=False, reply_cache=False)


def voice(seconds: float = 1.2, lead_s: float = 0.3, trail_s: float = 1.0) -> Pcm:
    """A voiced, speech-like signal (a gliding 130 Hz buzz with harmonics, syllable-rate
    loudness) between silences; webrtcvad calls every frame of it speech."""
    t = np.arange(int(SAMPLE_RATE * seconds)) / SAMPLE_RATE
    f0 = 130 + 20 * np.sin(2 * np.pi * 3 * t)
    phase = 2 * np.pi * np.cumsum(f0) / SAMPLE_RATE
    buzz = sum(np.sin(k * phase) / k for k in range(1, 25))
    envelope = 0.6 + 0.4 * np.sin(2 * np.pi * 4 * t)
    speech = (buzz * envelope / np.abs(buzz).max() * 8000).astype(np.int16)
    return np.concatenate([np.zeros(int(SAMPLE_RATE * lead_s), np.int16), speech,
                           np.zeros(int(SAMPLE_RATE * trail_s), np.int16)])


class FakeServer(ServerProcess):
    """A fake-model `apace serve` child process on a free loopback port."""

    def __init__(self, *args: str, env: dict[str, str] | None = None,
                 timeout: float = 60) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = b""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fake_server", "--port", str(self.port),
             *args],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        self._wait_ready(timeout)


def main(argv: list[str]) -> int:
    import app.cli
    import app.serve

    def build(_settings: Any, _located: Any = None) -> tuple[Engine, dict[str, Any]]:
        return fake_engine(), {}

    # The models are all that differ from `apace serve`.
    app.serve.build_engine = build  # type: ignore[attr-defined,assignment]
    return app.cli.main(["serve", *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


async def settled(server: FakeServer, tasks: int | None = None,
                  within_s: float = 15) -> dict[str, Any]:
    """/healthz once no session is left and the task count held still for 0.5 s (and is
    down to `tasks`, if given: connections refused early linger LINGER_S, no longer)."""
    deadline = time.monotonic() + within_s
    previous = None
    while time.monotonic() < deadline:
        health: dict[str, Any] = server.get("/healthz")
        if health["sessions"] == 0 and health["tasks"] == previous \
                and (tasks is None or health["tasks"] <= tasks):
            return health
        previous = health["tasks"] if health["sessions"] == 0 else None
        await asyncio.sleep(0.5)
    raise AssertionError(f"server never settled: {server.get('/healthz?detail')}")
