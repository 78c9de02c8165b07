"""The `openai` package's own Realtime client against /v1/realtime: it connects with its
API key as the pairing token, and parses every event apace sends into its typed models."""

from __future__ import annotations

import pytest

from app.security.access import AccessPolicy
from tests.transports import fake_engine
from tests.unit.realtime_harness import pcm24, serving, speech

pytest.importorskip("openai")
import openai
from openai.types.realtime import (
    ConversationItemInputAudioTranscriptionCompletedEvent,
    InputAudioBufferSpeechStartedEvent,
    InputAudioBufferSpeechStoppedEvent,
    RealtimeConversationItemAssistantMessage,
    ResponseAudioDeltaEvent,
    ResponseAudioTranscriptDeltaEvent,
    ResponseDoneEvent,
    SessionCreatedEvent,
    SessionUpdatedEvent,
)

pytestmark = pytest.mark.timeout(20)


async def test_a_spoken_turn_with_the_openai_client() -> None:
    fake = fake_engine(["What is the time?"], ["It is ", "noon."])
    async with serving(fake, access=AccessPolicy(token="tok")) as served:
        client = openai.AsyncOpenAI(api_key="tok", base_url=f"http://127.0.0.1:{served.port}/v1")
        async with client.realtime.connect(model="apace") as connection:
            created = await connection.recv()
            assert isinstance(created, SessionCreatedEvent)
            await connection.session.update(session={
                "type": "realtime", "output_modalities": ["audio"],
                "audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000},
                                    "turn_detection": {"type": "server_vad"}}}})
            for i in range(0, 30, 5):
                await connection.input_audio_buffer.append(audio=pcm24(speech()[i : i + 5]))
            seen: list[object] = []
            async for event in connection:
                seen.append(event)
                if isinstance(event, ResponseDoneEvent):
                    break
        kinds = {type(event) for event in seen}
        assert {SessionUpdatedEvent, InputAudioBufferSpeechStartedEvent,
                InputAudioBufferSpeechStoppedEvent, ResponseAudioDeltaEvent,
                ResponseAudioTranscriptDeltaEvent,
                ConversationItemInputAudioTranscriptionCompletedEvent} <= kinds
        done = seen[-1]
        assert isinstance(done, ResponseDoneEvent)
        assert done.response.status == "completed"
        assert done.response.output is not None
        item = done.response.output[0]
        assert isinstance(item, RealtimeConversationItemAssistantMessage)
        assert item.content[0].transcript == "It is noon."


async def test_text_in_and_cancel_with_the_openai_client() -> None:
    fake = fake_engine(["unused"], [f"w{i} " for i in range(40)])
    async with serving(fake) as served:
        client = openai.AsyncOpenAI(api_key="any", base_url=f"http://127.0.0.1:{served.port}/v1")
        async with client.realtime.connect(model="apace") as connection:
            await connection.conversation.item.create(item={
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "Talk a lot."}]})
            await connection.response.create()
            deltas = 0
            async for event in connection:
                if isinstance(event, ResponseAudioDeltaEvent):
                    deltas += 1
                    if deltas == 3:
                        await connection.response.cancel()
                if isinstance(event, ResponseDoneEvent):
                    break
        assert event.response.status == "cancelled"
        assert fake.responder.users == ["Talk a lot."]
