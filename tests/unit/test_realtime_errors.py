"""Every protocol error on /v1/realtime gets an error event (or a refused upgrade, or a
close frame) with a reason, and the session goes on; bounded fuzz on loopback."""

from __future__ import annotations

import asyncio
import json
import random

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from app.security.access import AccessPolicy
from app.transports.realtime.route import REALTIME
from tests.transports import fake_engine
from tests.unit.realtime_harness import pcm24, rt_client, serving, speech

pytestmark = pytest.mark.timeout(20)


@pytest.mark.parametrize("message, code", [
    ({"type": "conversation.create"}, "unknown_event"),
    ({"type": "input_audio_buffer.append", "audio": "***"}, "invalid_request"),
    ({"type": "input_audio_buffer.append", "audio": "AAEC"}, "invalid_request"),  # 3 bytes
    ({"type": "input_audio_buffer.append", "audio": 5}, "invalid_request"),
    ({"type": "input_audio_buffer.commit"}, "commit_with_server_vad"),
    ({"type": "response.cancel"}, "response_cancel_not_active"),
    ({"type": "response.create"}, "no_input"),
    ({"type": "conversation.item.create", "item": {"type": "message", "role": "system",
                                                   "content": []}}, "unsupported_item"),
    ({"type": "conversation.item.create", "item": {"type": "message", "role": "user",
                                                   "content": [{"type": "input_audio"}]}},
     "unsupported_content"),
    ({"type": "conversation.item.truncate", "item_id": "nope", "audio_end_ms": 5},
     "item_truncate_invalid_item_id"),
    ({"type": "conversation.item.truncate", "item_id": "x", "audio_end_ms": -1},
     "invalid_request"),
    ({"type": "conversation.item.delete", "item_id": "x"}, "unsupported_event"),
    ({"type": "session.update", "session": {"audio": {"input": {
        "format": {"type": "audio/pcmu"}}}}}, "unsupported_audio_format"),
    ({"type": "session.update", "session": {"type": "transcription"}},
     "unsupported_session_type"),
    ({"type": "session.update", "session": {"audio": {"input": {
        "turn_detection": {"type": "server_vad", "create_response": False}}}}},
     "unsupported_turn_detection"),
    ({"type": "session.update", "session": {"output_modalities": ["video"]}},
     "invalid_request"),
    ({"no": "type"}, "invalid_event"),
    ([1, 2, 3], "invalid_event"),
])
async def test_a_bad_client_event_gets_an_error_and_the_session_goes_on(
        message: object, code: str) -> None:
    async with serving(fake_engine()) as served, rt_client(served.url) as client:
        await client.send(**message) if isinstance(message, dict) \
            else await client.ws.send(json.dumps(message))
        error = await client.next("error")
        assert error["error"]["code"] == code and error["error"]["message"]
        await client.send(type="session.update", session={})
        await client.next("session.updated")


async def test_malformed_json_and_deep_nesting_are_refused_unparsed() -> None:
    async with serving(fake_engine()) as served, rt_client(served.url) as client:
        await client.ws.send("{not json")
        assert (await client.next("error"))["error"]["code"] == "invalid_json"
        await client.ws.send("[" * 5000 + "]" * 5000)
        error = await client.next("error")
        assert "nested" in error["error"]["message"]


async def test_the_client_event_id_is_echoed_in_the_error() -> None:
    async with serving(fake_engine()) as served, rt_client(served.url) as client:
        await client.send(type="bogus", event_id="evt_42")
        assert (await client.next("error"))["error"]["event_id"] == "evt_42"


async def test_a_message_over_the_size_limit_closes_with_1009() -> None:
    async with serving(fake_engine()) as served, rt_client(served.url) as client:
        assert served.app[REALTIME].options.max_message_bytes == 1024 * 1024
        await client.ws.send(json.dumps({"type": "input_audio_buffer.append",
                                         "audio": "A" * (1024 * 1024 + 10)}))
        with pytest.raises(ConnectionClosed) as closed:
            for _ in range(100):
                await client.ws.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


async def test_access_rules_apply_before_the_upgrade() -> None:
    access = AccessPolicy(token="s3cret")
    async with serving(fake_engine(), access=access) as served:
        with pytest.raises(InvalidStatus) as refused:
            async with connect(served.url):
                pass
        assert refused.value.response.status_code == 401
        with pytest.raises(InvalidStatus) as cross:
            async with connect(served.url, origin="http://evil.example",  # type: ignore[arg-type]
                               additional_headers={"Authorization": "Bearer s3cret"}):
                pass
        assert cross.value.response.status_code == 403
        async with rt_client(served.url, Authorization="Bearer s3cret") as client:
            assert client.events[0]["type"] == "session.created"


async def test_a_full_server_refuses_with_503() -> None:
    async with serving(fake_engine(), max_sessions=1) as served, rt_client(served.url):
        with pytest.raises(InvalidStatus) as refused:
            async with connect(served.url):
                pass
        assert refused.value.response.status_code == 503


async def test_shutdown_tells_the_client_then_closes_going_away() -> None:
    async with serving(fake_engine()) as served, rt_client(served.url) as client:
        await served.app[REALTIME].close_all()
        error = await client.next("error")
        assert error["error"]["code"] == "server_shutting_down"
        with pytest.raises(ConnectionClosed) as closed:
            await client.ws.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001


async def test_fuzzed_events_never_end_the_session() -> None:
    """Bounded fuzz: mutated valid events and junk; every reply is an event, the socket
    stays open, and a real turn still works afterwards."""
    rng = random.Random(99)
    valid = [{"type": "session.update", "session": {"output_modalities": ["audio"]}},
             {"type": "input_audio_buffer.append", "audio": pcm24(speech(1, 1))},
             {"type": "response.cancel"}, {"type": "input_audio_buffer.clear"},
             {"type": "conversation.item.create", "item": {"role": "user", "content": [
                 {"type": "input_text", "text": "hi"}]}}]
    fake = fake_engine(["Hello."], ["Hi there."])
    async with serving(fake) as served, rt_client(served.url) as client:
        for _ in range(150):
            text = json.dumps(rng.choice(valid))
            chars = list(text)
            for _ in range(rng.randint(0, 4)):
                chars[rng.randrange(len(chars))] = chr(rng.randrange(32, 0x2FF))
            await client.ws.send("".join(chars) if rng.random() < 0.8
                                 else rng.randbytes(rng.randint(1, 200)))
        await asyncio.sleep(0.2)
        await client.send(type="input_audio_buffer.clear")
        await client.next("input_audio_buffer.cleared", where=lambda e: True)
        assert all(isinstance(e.get("type"), str) for e in client.events)
        await client.append(speech())
        done = await client.next("response.done", where=lambda e: e["response"]["output"]
                                 and "Hi there." in json.dumps(e))
        assert done["response"]["status"] == "completed"
