"""The `wyoming` package (what Home Assistant uses) as the client of apace's Wyoming
server: its own event classes read what apace writes, for each of the three services."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.transports.wyoming.info import ProgramNames
from app.transports.wyoming.server import WyomingOptions, WyomingServer
from tests.fakes import SILENCE, VOICE, any_sound
from tests.transports import fake_engine

pytest.importorskip("wyoming")
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.handle import Handled, HandledChunk, HandledStart, HandledStop
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
)

pytestmark = pytest.mark.timeout(20)


@pytest.fixture
async def client() -> AsyncIterator[AsyncTcpClient]:
    fake = fake_engine(["Turn on the lights."], ["Sure, ", "the lights are on."])
    server = WyomingServer(fake.engine, ProgramNames(asr_model="whisper-tiny.en"),
                           WyomingOptions(port=0), classify=any_sound)
    await server.start()
    tcp = AsyncTcpClient("127.0.0.1", server.port)
    tcp.read_timeout = 5
    await tcp.connect()
    yield tcp
    await tcp.disconnect()
    await server.close()
    fake.close()


async def test_info_parses_with_the_package(client: AsyncTcpClient) -> None:
    await client.write_event(Describe().event())
    info = Info.from_event(await client.read_event())
    assert info.asr[0].models[0].name == "whisper-tiny.en"
    assert info.tts[0].supports_synthesize_streaming
    assert info.handle[0].supports_handled_streaming


async def test_speech_to_text_with_the_package(client: AsyncTcpClient) -> None:
    await client.write_event(Transcribe(language="en").event())
    await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
    for frame in [VOICE] * 10 + [SILENCE] * 20:
        await client.write_event(AudioChunk(rate=16000, width=2, channels=1,
                                            audio=frame.tobytes()).event())
    await client.write_event(AudioStop().event())
    event = await client.read_event()
    assert Transcript.is_type(event.type)
    assert Transcript.from_event(event).text == "Turn on the lights."


async def test_streaming_text_to_speech_with_the_package(client: AsyncTcpClient) -> None:
    await client.write_event(SynthesizeStart().event())
    await client.write_event(SynthesizeChunk(text="Good morning. ").event())
    await client.write_event(Synthesize(text="Good morning. It is sunny.").event())
    await client.write_event(SynthesizeChunk(text="It is sunny.").event())
    await client.write_event(SynthesizeStop().event())
    start = AudioStart.from_event(await client.read_event())
    audio = b""
    while AudioChunk.is_type((event := await client.read_event()).type):
        chunk = AudioChunk.from_event(event)
        assert (chunk.rate, chunk.width, chunk.channels) == (start.rate, 2, 1)
        audio += chunk.audio
    assert AudioStop.is_type(event.type)
    assert SynthesizeStopped.is_type((await client.read_event()).type)
    assert len(audio) == 5 * 5 * 320 * 2  # five words of the fake voice


async def test_conversation_with_the_package(client: AsyncTcpClient) -> None:
    await client.write_event(Transcript(text="Lights please",
                                        context={"conversation_id": "c1"}).event())
    assert HandledStart.is_type((await client.read_event()).type)
    text = ""
    while HandledChunk.is_type((event := await client.read_event()).type):
        text += HandledChunk.from_event(event).text
    handled = Handled.from_event(event)
    assert handled.text == text == "Sure, the lights are on."
    assert handled.context == {"conversation_id": "c1"}
    assert HandledStop.is_type((await client.read_event()).type)


async def test_errors_read_as_the_package_error_event(client: AsyncTcpClient) -> None:
    await client.write_event(AudioStop().event())
    error = Error.from_event(await client.read_event())
    assert error.code == "audio-before-start"
