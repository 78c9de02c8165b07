"""`apace wyoming` with the real embedded models, driven by the `wyoming` package (what
Home Assistant uses) over loopback: Home Assistant's voice pipeline — speech-to-text,
the conversation agent, streaming text-to-speech — against one apace process."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from app.process import REPO, free_port
from models.wav_files import read_wav
from tests.wer import wer

pytest.importorskip("wyoming")
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.handle import Handled, HandledChunk
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    """A real `apace wyoming` process; yields its port once it is ready."""
    chosen = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "app", "wyoming", "--port", str(chosen)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    log, deadline = b"", time.monotonic() + 180
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    while b"apace wyoming ready" not in log:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"apace wyoming did not start:\n{log.decode(errors='replace')}")
        if selector.select(timeout=1.0):
            log += os.read(proc.stdout.fileno(), 65536)
    selector.close()
    yield chosen
    proc.send_signal(signal.SIGTERM)
    try:
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


async def client_for(port: int) -> AsyncTcpClient:
    client = AsyncTcpClient("127.0.0.1", port)
    client.read_timeout = 60
    await client.connect()
    return client


async def test_info_names_the_real_models(port: int) -> None:
    client = await client_for(port)
    await client.write_event(Describe().event())
    info = Info.from_event(await client.read_event())
    await client.disconnect()
    assert info.asr[0].models[0].name == "whisper-tiny.en"
    assert info.handle[0].models[0].name == "smollm2-135m"
    assert info.tts[0].voices[0].name


async def test_home_assistant_pipeline_speech_to_reply_audio(port: int, ask) -> None:
    question = "What is two plus two?"
    pcm = read_wav(ask(question))
    client = await client_for(port)
    await client.write_event(Transcribe(language="en").event())
    await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
    for start in range(0, len(pcm), 1024):  # ~64 ms chunks, as satellites send
        await client.write_event(AudioChunk(rate=16000, width=2, channels=1,
                                            audio=pcm[start : start + 1024].tobytes()).event())
    started = time.monotonic()
    await client.write_event(AudioStop().event())
    transcript = Transcript.from_event(await client.read_event())
    asr_s = time.monotonic() - started
    heard = transcript.text.replace("2", "two")  # Whisper writes numbers as digits
    assert wer(question, heard) <= 0.2, transcript.text
    assert asr_s < 3.0  # (speculated at the silence onset: usually a few ms)

    await client.write_event(Transcript(text=transcript.text,
                                        context={"conversation_id": "kitchen"}).event())
    chunks = []
    while not Handled.is_type((event := await client.read_event()).type):
        if HandledChunk.is_type(event.type):
            chunks.append(HandledChunk.from_event(event).text)
    reply = Handled.from_event(event).text or ""
    assert "four" in reply.lower() or "4" in reply  # the arithmetic skill, not a guess
    assert "".join(chunks) == reply
    await client.read_event()  # handled-stop

    await client.write_event(SynthesizeStart().event())
    await client.write_event(SynthesizeChunk(text=reply).event())
    await client.write_event(Synthesize(text=reply).event())
    await client.write_event(SynthesizeStop().event())
    assert AudioStart.is_type((await client.read_event()).type)
    audio = b""
    while AudioChunk.is_type((event := await client.read_event()).type):
        audio += AudioChunk.from_event(event).audio
    await client.disconnect()
    assert 0.5 < len(audio) / 2 / 16000 < 10  # the reply, spoken


async def test_streamed_text_is_spoken_before_it_is_all_sent(port: int) -> None:
    client = await client_for(port)
    await client.write_event(SynthesizeStart().event())
    await client.write_event(SynthesizeChunk(text="The kitchen lights are on, and ").event())
    started = time.monotonic()
    assert AudioStart.is_type((await client.read_event()).type)
    first = await client.read_event()  # no stop sent yet: this is clause one's audio
    first_s = time.monotonic() - started
    assert AudioChunk.is_type(first.type)
    await client.write_event(SynthesizeChunk(text="the door is locked.").event())
    await client.write_event(SynthesizeStop().event())
    while not AudioStop.is_type((await client.read_event()).type):
        pass
    await client.disconnect()
    assert first_s < 2.0
