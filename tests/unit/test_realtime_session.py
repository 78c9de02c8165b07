"""/v1/realtime with the real server app and Engine on fake models, spoken to by a raw
`websockets` client: turns by apace's endpointing, by manual commit and by text; barge-in
and response.cancel truncate the item as the browser path does."""

from __future__ import annotations

import asyncio
import base64
import threading

import pytest

from app.transports.realtime.route import REALTIME
from tests.fakes import SILENCE, VOICE
from tests.transports import fake_engine
from tests.unit.realtime_harness import rt_client, serving, speech

pytestmark = pytest.mark.timeout(20)

LONG = [f"Word{i} " for i in range(30)] + ["end."]


async def test_session_created_reports_the_effective_session() -> None:
    async with serving(fake_engine()) as served, rt_client(served.url) as client:
        session = client.events[0]["session"]
        assert session["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}
        assert session["audio"]["input"]["turn_detection"]["type"] == "server_vad"
        assert session["audio"]["input"]["turn_detection"]["silence_duration_ms"] == 200
        await client.send(type="session.update", session={"type": "realtime",
                                                          "output_modalities": ["text"]})
        updated = await client.next("session.updated")
        assert updated["session"]["output_modalities"] == ["text"]


async def test_a_spoken_turn_is_answered_by_the_server_vad_in_protocol_order() -> None:
    fake = fake_engine(["What is up?"], ["All good ", "here."])
    async with serving(fake) as served, rt_client(served.url) as client:
        await client.append(speech())
        done = await client.next("response.done")
        kinds = client.kinds()
        order = ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped",
                 "input_audio_buffer.committed", "conversation.item.added", "response.created",
                 "response.output_item.added", "response.content_part.added",
                 "response.output_audio.delta", "response.output_audio.done",
                 "response.output_audio_transcript.done", "response.output_item.done",
                 "response.done"]
        positions = [kinds.index(kind) for kind in order]
        assert positions == sorted(positions), kinds
        stopped = client.events[kinds.index("input_audio_buffer.speech_stopped")]
        completed = await client.next("conversation.item.input_audio_transcription.completed")
        assert completed["transcript"] == "What is up?"
        assert completed["item_id"] == stopped["item_id"]
        assert done["response"]["status"] == "completed"
        (item,) = done["response"]["output"]
        assert item["content"][0]["transcript"] == "All good here."
        deltas = [e for e in client.events if e["type"] == "response.output_audio.delta"]
        audio = b"".join(base64.b64decode(e["delta"]) for e in deltas)
        # Three words of the fake voice (300 ms) at 24 kHz PCM16, give or take the resampler.
        assert abs(len(audio) / 2 / 24000 - 0.3) < 0.03
        text = "".join(e["delta"] for e in client.events
                       if e["type"] == "response.output_audio_transcript.delta")
        assert text == "All good here."


async def test_manual_commit_then_response_create() -> None:
    fake = fake_engine(["Hello there."], ["Hi."])
    async with serving(fake) as served, rt_client(served.url) as client:
        await client.send(type="session.update",
                          session={"audio": {"input": {"turn_detection": None}}})
        assert (await client.next("session.updated"))["session"]["audio"]["input"][
            "turn_detection"] is None
        await client.append(speech(10, 2))
        assert "input_audio_buffer.speech_started" not in client.kinds()
        await client.send(type="input_audio_buffer.commit")
        committed = await client.next("input_audio_buffer.committed")
        await client.send(type="response.create")
        done = await client.next("response.done")
        completed = await client.next("conversation.item.input_audio_transcription.completed")
        assert completed["item_id"] == committed["item_id"]
        assert done["response"]["output"][0]["content"][0]["transcript"] == "Hi."
        # All the committed audio, at 16 kHz (the test's own resampler keeps back < 1 frame).
        (samples,) = fake.transcriber.calls
        assert 11 * 320 <= samples <= 12 * 320


async def test_a_text_item_is_answered_through_the_conversation() -> None:
    fake = fake_engine(["unused"], ["Paris."])
    async with serving(fake) as served, rt_client(served.url) as client:
        await client.send(type="conversation.item.create", item={
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "Capital of France?"}]})
        await client.next("conversation.item.done")
        await client.send(type="response.create")
        done = await client.next("response.done")
        assert done["response"]["output"][0]["content"][0]["transcript"] == "Paris."
        assert fake.responder.users == ["Capital of France?"]
        assert fake.transcriber.calls == []  # text is not transcribed


async def test_response_cancel_truncates_to_what_was_sent() -> None:
    fake = fake_engine(["Tell me a story."], LONG)
    async with serving(fake) as served, rt_client(served.url) as client:
        await client.append(speech())
        for _ in range(5):
            await client.next("response.output_audio.delta")
        await client.send(type="response.cancel")
        done = await client.next("response.done")
        assert done["response"]["status"] == "cancelled"
        assert done["response"]["status_details"]["reason"] == "client_cancelled"
        heard = done["response"]["output"][0]["content"][0]["transcript"]
        assert 0 < len(heard.split()) < len(LONG)
        await asyncio.sleep(0.1)
        assert client.kinds().count("response.done") == 1  # and no audio after it
        last = client.kinds()[::-1].index("response.done")
        assert "response.output_audio.delta" not in client.kinds()[len(client.kinds()) - last:]


async def test_new_speech_barges_in_and_the_response_is_cancelled() -> None:
    fake = fake_engine(["Tell me a story.", "Stop."], LONG)
    async with serving(fake) as served, rt_client(served.url) as client:
        await client.append(speech())
        await client.next("response.output_audio.delta")
        await client.append([VOICE] * 15 + [SILENCE] * 10)  # held; its words decide at the pause
        done = await client.next("response.done")
        assert done["response"]["status"] == "cancelled"
        assert done["response"]["status_details"]["reason"] == "turn_detected"


async def test_truncate_cuts_what_the_conversation_remembers() -> None:
    fake = fake_engine(["Count please.", "And again?"], ["One two three four."])
    async with serving(fake) as served, rt_client(served.url) as client:
        await client.append(speech())
        done = await client.next("response.done")
        item = done["response"]["output"][0]["id"]
        await client.send(type="conversation.item.truncate", item_id=item, content_index=0,
                          audio_end_ms=200)
        truncated = await client.next("conversation.item.truncated")
        assert truncated["audio_end_ms"] == 200
        ((session, _ws),) = served.app[REALTIME].sessions.values()
        assert session.conversation is not None
        last = session.conversation.history[-1]
        assert (last.role, last.content, last.interrupted) == ("assistant", "One two", True)
        # The LLM reads the history without that cut-off reply (the integrity rules).
        await client.append(speech())
        await client.next("response.done")
        assert "One two" not in [m.content for m in fake.responder.histories[-1]]


async def test_text_only_output_sends_no_audio() -> None:
    fake = fake_engine(["Hi"], ["Hello."])
    async with serving(fake) as served, rt_client(served.url) as client:
        await client.send(type="session.update", session={"output_modalities": ["text"]})
        await client.append(speech())
        done = await client.next("response.done")
        assert done["response"]["output"][0]["content"][0] == {"type": "output_text",
                                                               "text": "Hello."}
        assert "response.output_audio.delta" not in client.kinds()
        assert "response.output_text.delta" in client.kinds()
    assert fake.synthesizer.texts == [], "no speech is made for a text-only session"


@pytest.mark.parametrize("field", ["output_modalities", "modalities"])
async def test_a_text_only_session_answers_a_typed_turn_without_making_speech(field: str) -> None:
    """`modalities` is the beta API's name: both mean the same. The reply is text, and
    the synthesizer is never called (not merely its audio left unsent)."""
    fake = fake_engine(reply=["Fine, ", "thanks."])
    async with serving(fake) as served, rt_client(served.url) as client:
        await client.send(type="session.update", session={field: ["text"]})
        assert (await client.next("session.updated"))["session"]["output_modalities"] == ["text"]
        await client.send(type="conversation.item.create", item={
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "How are you?"}]})
        await client.send(type="response.create")
        done = await client.next("response.done", timeout=3)
        assert done["response"]["status"] == "completed"
        assert done["response"]["output"][0]["content"] == [{"type": "output_text",
                                                             "text": "Fine, thanks."}]
        assert "response.output_audio.delta" not in client.kinds()
    assert fake.synthesizer.texts == []
    assert fake.transcriber.calls == []


async def test_a_typed_turn_never_waits_on_the_asr_worker() -> None:
    """A transcription holds the ASR worker (another session's turn, a caption): a typed
    turn's response still completes meanwhile — its words go to no ASR job."""
    fake = fake_engine(reply=["Four."])
    release = threading.Event()
    async with serving(fake) as served, rt_client(served.url) as client:
        busy = asyncio.ensure_future(fake.engine.asr_worker.run(release.wait, 10.0))
        try:
            await asyncio.sleep(0.02)
            await client.send(type="conversation.item.create", item={
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "Two plus two?"}]})
            await client.send(type="response.create")
            done = await client.next("response.done", timeout=2)
            assert not busy.done(), "the ASR worker was blocked all along"
        finally:
            release.set()
            await busy
    assert done["response"]["output"][0]["content"][0]["transcript"] == "Four."
    assert fake.transcriber.calls == []


async def test_the_socket_stays_alive_while_the_context_opens_and_early_audio_counts() -> None:
    """A slow LLM context (a big model on a busy box): pings are answered meanwhile, and
    audio sent before session.created is served once the conversation is ready."""
    import time

    from websockets.asyncio.client import connect

    from pipeline.engine import ClosableResponder
    from tests.unit.realtime_harness import RtClient, pcm24

    fake = fake_engine(["Early bird."], ["Hi."])
    opened = fake.engine.open_responder

    def slow_open() -> ClosableResponder:
        time.sleep(0.6)
        return opened()

    fake.engine.open_responder = slow_open
    async with serving(fake) as served, \
            connect(served.url, ping_interval=0.1, ping_timeout=0.2) as ws:
        client = RtClient(ws)
        for frames in [speech()[i : i + 5] for i in range(0, 30, 5)]:
            await client.send(type="input_audio_buffer.append", audio=pcm24(frames))
        await client.next("session.created", timeout=5)
        completed = await client.next("conversation.item.input_audio_transcription.completed")
        assert completed["transcript"] == "Early bird."
        assert (await client.next("response.done"))["response"]["status"] == "completed"
