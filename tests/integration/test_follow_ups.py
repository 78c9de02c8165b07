"""A follow-up on the last answer through the whole conversation with the embedded models:
Piper speaks the questions, Whisper hears them, the skills answer, the LLM stands by."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from app.bench.utterances import speak
from app.runtime import EngineOptions, Settings, build_engine
from models.piper import PiperSynthesizer
from pipeline.conversation import Conversation
from pipeline.events import FRAME_SAMPLES, AudioFrame, Pcm
from pipeline.speaker import Speaker
from pipeline.timeline import now

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TURN_TIMEOUT_S = 60.0


async def _frames(conv: Conversation, utterances: list[Pcm]) -> AsyncIterator[AudioFrame]:
    """A microphone at real-time pace: each utterance, then silence until its turn has
    been answered and played out; the speaker is popped as a transport would."""
    silence = np.zeros(FRAME_SAMPLES, np.int16)
    for n, pcm in enumerate(utterances, 1):
        for start in range(0, len(pcm) - FRAME_SAMPLES + 1, FRAME_SAMPLES):
            yield AudioFrame(pcm[start:start + FRAME_SAMPLES], now())
            conv.speaker.pop()
            await asyncio.sleep(0.02)
        deadline = time.monotonic() + TURN_TIMEOUT_S
        while len(conv.turns) < n or conv.busy:
            assert time.monotonic() < deadline, f"turn {n} not answered in {TURN_TIMEOUT_S} s"
            yield AudioFrame(silence, now())
            conv.speaker.pop()
            await asyncio.sleep(0.02)


async def test_add_five_to_that_works_on_the_answer_before(
    voice: PiperSynthesizer, tmp_path: Path,
) -> None:
    engine, _ = build_engine(Settings(engine=EngineOptions(data_dir=str(tmp_path),
                                                           turn_detector=False)))
    utterances = [speak(voice, "What is twelve times seven?"), speak(voice, "Add five to that.")]
    try:
        async with engine.open(Speaker()) as conv:
            await conv.run(_frames(conv, utterances))
    finally:
        engine.close()
    first, second = conv.turns
    assert first.skill == "math" and "84" in first.reply, first
    assert second.skill == "math" and second.reply == "84 plus 5 is 89.", second
    assert conv.last_result is not None and conv.last_result.value == 89
