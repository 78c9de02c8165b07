"""The quality bench's Wyoming client (app.transports.wyoming.client) against the
Wyoming server on fake models: a question goes through transcribe, the agent and streamed
speech as Home Assistant sends it, and comes back as a turn record with reply audio."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest

from app.transports.wyoming.client import WyomingClient
from app.transports.wyoming.info import ProgramNames
from app.transports.wyoming.server import WyomingOptions, WyomingServer
from tests.fakes import any_sound
from tests.transports import FakeEngine, fake_engine

pytestmark = pytest.mark.timeout(20)


@pytest.fixture
async def served() -> AsyncIterator[tuple[WyomingServer, FakeEngine]]:
    fake = fake_engine(["What time is it?", "And tomorrow?"],
                       ["It is noon. ", "Have a nice day."])
    server = WyomingServer(fake.engine, ProgramNames(), WyomingOptions(port=0),
                           classify=any_sound)
    await server.start()
    yield server, fake
    await server.close()
    fake.close()


def question(seconds: float = 0.5) -> np.ndarray:
    return np.concatenate([np.full(int(16000 * seconds), 3000, np.int16),
                           np.zeros(4000, np.int16)])


async def test_a_question_comes_back_as_a_turn_with_reply_audio(served) -> None:
    server, fake = served
    client = WyomingClient(f"tcp://127.0.0.1:{server.port}")
    await client.connect()
    try:
        pcm = question()
        spoke = await client.say(pcm, speech_end_sample=8000)
        turn = await client.wait_for("turn", timeout=10)
        await client.say(pcm)
        second = await client.wait_for("turn", after=client.events.index(turn) + 1, timeout=10)
    finally:
        await client.close()
    assert turn["transcript"] == "What time is it?"
    assert turn["reply"] == "It is noon. Have a nice day." and turn["speech_end_t"] == spoke
    heard = client.received.first_audible_after(spoke)
    assert heard is not None and heard <= turn["received"]
    assert second["transcript"] == "And tomorrow?"
    # One conversation id: the agent saw the first exchange in the second's history.
    assert [m.content for m in fake.responder.histories[1]] == [
        "What time is it?", "It is noon. Have a nice day."]
    assert not client.connection_failed


async def test_an_unreachable_server_is_a_connection_error() -> None:
    client = WyomingClient("tcp://127.0.0.1:9")  # discard port: nothing listens
    with pytest.raises(ConnectionError):
        await client.connect()
    with pytest.raises(ValueError):
        WyomingClient("http://127.0.0.1:10300")
