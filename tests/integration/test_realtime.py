"""/v1/realtime on a real `apace serve --wyoming PORT` with the embedded models: the
`openai` package's Realtime client speaks a question and hears the answer; new speech
barges in; apace's bench client measures TTFA; Wyoming answers from the same process."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Iterator

import numpy as np
import pytest

from app.bench.utterances import speak
from app.process import ServerProcess, free_port
from app.transports.pacing import FrameClock
from app.transports.realtime.client import RealtimeClient
from models.wav_files import read_wav
from pipeline.audio import frames, resample, rms_dbfs, speech_end_sample, to_int16
from tests.wer import wer

pytest.importorskip("openai")
import openai
from openai.types.realtime import (
    ConversationItemInputAudioTranscriptionCompletedEvent,
    ResponseAudioDeltaEvent,
    ResponseDoneEvent,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

LONG_ANSWERS = ("You are a storyteller. Answer every question with at least five long "
                "sentences in plain English.")


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[ServerProcess, int]]:
    wyoming = free_port()
    proc = ServerProcess("--wyoming", str(wyoming), "--system-prompt", LONG_ANSWERS)
    yield proc, wyoming
    proc.stop()


def chunks24(pcm: np.ndarray) -> list[str]:
    """16 kHz audio as 20 ms base64 PCM16 appends at 24 kHz."""
    audio = to_int16(resample(pcm, 16000, 24000)).astype("<i2")
    return [base64.b64encode(chunk.tobytes()).decode() for chunk in frames(audio, 480, last="keep")]


async def test_the_openai_client_asks_and_hears_the_answer(server, ask) -> None:
    proc, _ = server
    question = "What is the capital of France?"
    pcm = read_wav(ask(question))
    end_chunk = speech_end_sample(pcm) * 24000 // 16000 // 480
    client = openai.AsyncOpenAI(api_key="unused-on-loopback", base_url=f"{proc.url}/v1")
    heard_at = speech_end = transcript = None
    async with client.realtime.connect(model="apace") as connection:
        async def mic() -> None:  # real-time pace, then silence, like a microphone
            nonlocal speech_end
            clock = FrameClock(24000)
            for index, chunk in enumerate([*chunks24(pcm), *chunks24(np.zeros(16000 * 3,
                                                                               np.int16))]):
                await clock.tick()
                await connection.input_audio_buffer.append(audio=chunk)
                if index == end_chunk:
                    speech_end = time.monotonic()

        sender = asyncio.create_task(mic())
        async for event in connection:
            if isinstance(event, ConversationItemInputAudioTranscriptionCompletedEvent):
                transcript = event.transcript
            elif isinstance(event, ResponseAudioDeltaEvent) and heard_at is None:
                if rms_dbfs(np.frombuffer(base64.b64decode(event.delta), "<i2")) > -45:
                    heard_at = time.monotonic()
            elif isinstance(event, ResponseDoneEvent):
                done = event
                break
        sender.cancel()
    assert transcript is not None and wer(question, transcript) <= 0.2, transcript
    assert done.response.status == "completed"
    assert heard_at is not None and speech_end is not None
    assert 0.2 < heard_at - speech_end < 5.0  # after the endpoint wait, well within a pause


async def test_new_speech_barges_in_and_the_item_keeps_what_was_heard(server, ask, voice
                                                                      ) -> None:
    proc, _ = server
    question = read_wav(ask("Tell me a story about a brave little cat."))
    interruption = speak(voice, "Stop, stop, wait a moment please.", lead_s=0.0, trail_s=1.0)
    async with RealtimeClient(proc.url) as client:
        await asyncio.sleep(0.5)
        speech_end = await client.say(question, speech_end_sample(question))
        for _ in range(200):
            if client.received.first_audible_after(speech_end):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)
        mark = len(client.events)
        interrupting = asyncio.ensure_future(client.say(interruption))
        done = await client.wait_for("response.done", after=mark, timeout=15)
        cut_at = done["received"]
        await interrupting
        await asyncio.sleep(0.6)
    assert done["response"]["status"] == "cancelled"
    assert done["response"]["status_details"]["reason"] == "turn_detected"
    heard = done["response"]["output"][0]["content"][0]["transcript"]
    assert heard and not client.received.audible_between(cut_at + 0.2, cut_at + 0.6)


async def test_the_bench_client_measures_ttfa_with_the_turn_timeline(server, ask) -> None:
    proc, _ = server
    pcm = read_wav(ask("What time is it?"))
    async with RealtimeClient(proc.url) as client:
        await asyncio.sleep(0.3)
        speech_end = await client.say(pcm, speech_end_sample(pcm))
        turn = await client.wait_for("turn", timeout=60)
        heard = client.received.first_audible_after(speech_end)
    assert heard is not None and "ttfa_server" in turn["timeline_ms"]
    ttfa_ms = (heard - speech_end) * 1000
    # The client sees the first audio after the server sent it, and not much later.
    assert turn["timeline_ms"]["ttfa_server"] < ttfa_ms + 150


async def test_wyoming_answers_from_the_same_process(server) -> None:
    pytest.importorskip("wyoming")
    from wyoming.client import AsyncTcpClient
    from wyoming.info import Describe, Info

    _, port = server
    client = AsyncTcpClient("127.0.0.1", port)
    await client.connect()
    await client.write_event(Describe().event())
    info = Info.from_event(await client.read_event())
    await client.disconnect()
    assert info.handle and info.asr and info.tts
