"""The Wyoming server on loopback, with the real Engine on fake models, spoken to over raw
TCP: every service answers, and every protocol error gets an error event or a closed
connection with a reason — never a crash (bounded fuzz at the end)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import numpy as np
import pytest

from app.transports.wyoming.info import ProgramNames
from app.transports.wyoming.protocol import Decoder, Event, encode
from app.transports.wyoming.server import WyomingOptions, WyomingServer
from tests.fakes import SILENCE, VOICE, any_sound
from tests.transports import FakeEngine, fake_engine

pytestmark = pytest.mark.timeout(20)

Served = tuple[WyomingServer, FakeEngine]


class Raw:
    """A bare Wyoming client: bytes out, decoded events in."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.decoder = Decoder()
        self.events: list[Event] = []

    async def send(self, *events: Event, raw: bytes = b"") -> None:
        self.writer.write(b"".join(encode(e) for e in events) + raw)
        await self.writer.drain()

    async def next(self, kind: str | None = None, timeout: float = 3.0) -> Event:
        async with asyncio.timeout(timeout):
            while True:
                while self.events:
                    event = self.events.pop(0)
                    if kind is None or event.type == kind:
                        return event
                chunk = await self.reader.read(65536)
                if not chunk:
                    raise EOFError("connection closed")
                self.events += self.decoder.feed(chunk)

    async def closed(self, timeout: float = 3.0) -> bool:
        async with asyncio.timeout(timeout):
            while chunk := await self.reader.read(65536):
                self.events += self.decoder.feed(chunk)
        return True

    def close(self) -> None:
        self.writer.close()


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    fake = fake_engine(["What time is it?"], ["It is noon. ", "Have a nice day."], skills=True)
    server = WyomingServer(fake.engine, ProgramNames(), WyomingOptions(port=0, max_connections=3),
                           classify=any_sound)
    await server.start()
    yield server, fake
    await server.close()
    fake.close()


async def connect(server: WyomingServer) -> Raw:
    return Raw(*await asyncio.open_connection("127.0.0.1", server.port))


def audio(frames: list[np.ndarray]) -> list[Event]:
    fmt = {"rate": 16000, "width": 2, "channels": 1}
    return [Event("audio-start", fmt)] + [Event("audio-chunk", fmt, f.tobytes()) for f in frames] \
        + [Event("audio-stop")]


async def test_describe_lists_asr_tts_and_handle(served: Served) -> None:
    server, _ = served
    client = await connect(server)
    await client.send(Event("describe"))
    info = await client.next("info")
    assert [p["name"] for p in info.data["asr"]] == ["apace-asr"]
    assert info.data["tts"][0]["supports_synthesize_streaming"] is True
    assert info.data["handle"][0]["supports_handled_streaming"] is True
    client.close()


async def test_transcribe_answers_with_the_transcript(served: Served) -> None:
    server, _ = served
    client = await connect(server)
    await client.send(Event("transcribe", {"language": "en"}),
                      *audio([VOICE] * 10 + [SILENCE] * 20))
    transcript = await client.next("transcript")
    assert transcript.data == {"text": "What time is it?", "language": "en"}
    client.close()


async def test_a_silence_onset_is_transcribed_once_and_reused_at_audio_stop(served: Served) -> None:
    """The speculation: the transcription starts at apace's silence onset; the audio stays
    silent until audio-stop, so that transcript is the answer (no second ASR call)."""
    server, fake = served
    client = await connect(server)
    await client.send(*audio([SILENCE] * 5 + [VOICE] * 10 + [SILENCE] * 30))
    await client.next("transcript")
    assert len(fake.transcriber.calls) == 1
    # The utterance (pre-roll + speech + the onset's silence), not the whole recording.
    assert fake.transcriber.calls[0] < 45 * 320
    client.close()


async def test_speech_after_the_onset_means_the_whole_audio_is_transcribed(served: Served) -> None:
    server, fake = served
    client = await connect(server)
    frames = [VOICE] * 10 + [SILENCE] * 4 + [VOICE] * 10 + [SILENCE] * 2
    await client.send(*audio(frames))
    await client.next("transcript")
    assert fake.transcriber.calls[-1] == len(frames) * 320
    client.close()


async def test_synthesize_streams_16k_audio_between_start_and_stop(served: Served) -> None:
    server, _ = served
    client = await connect(server)
    await client.send(Event("synthesize", {"text": "Hello there. How are you?"}))
    start = await client.next()
    assert start.type == "audio-start" and start.data["rate"] == 16000
    samples = 0
    while (event := await client.next()).type == "audio-chunk":
        samples += len(event.payload or b"") // 2
    assert event.type == "audio-stop"
    assert samples == 5 * 5 * 320  # five words, 100 ms each (the fake voice)
    client.close()


async def test_streamed_text_is_spoken_clause_by_clause_before_the_stream_ends(served: Served) -> None:
    """Audio for the first clause arrives while the rest of the text has not been sent."""
    server, _ = served
    client = await connect(server)
    await client.send(Event("synthesize-start", {}),
                      Event("synthesize-chunk", {"text": "The kitchen light is on. "}),
                      Event("synthesize-chunk", {"text": "The door"}))
    await client.next("audio-start")
    assert (await client.next()).type == "audio-chunk"  # before synthesize-stop was sent
    await client.send(Event("synthesize", {"text": "The kitchen light is on. The door is shut."}),
                      Event("synthesize-chunk", {"text": " is shut."}), Event("synthesize-stop"))
    kinds = []
    while (event := await client.next()).type != "synthesize-stopped":
        kinds.append(event.type)
    assert kinds.count("audio-stop") == 1 and kinds[-1] == "audio-stop"
    assert "audio-start" not in kinds  # the `synthesize` copy was not spoken again
    client.close()


async def test_handle_streams_the_reply_and_keeps_history_per_conversation(served: Served) -> None:
    server, fake = served
    client = await connect(server)

    async def ask(text: str, conversation: str) -> tuple[list[str], Event]:
        await client.send(Event("transcript", {"text": text,
                                               "context": {"conversation_id": conversation}}))
        assert (await client.next()).type == "handled-start"
        chunks = []
        while (event := await client.next()).type == "handled-chunk":
            chunks.append(event.data["text"])
        assert (await client.next()).type == "handled-stop"
        return chunks, event

    chunks, handled = await ask("Tell me something.", "kitchen")
    assert handled.type == "handled" and handled.data["text"] == "It is noon. Have a nice day."
    assert "".join(chunks) == "It is noon. Have a nice day."
    assert handled.data["context"] == {"conversation_id": "kitchen"}
    await ask("And then?", "kitchen")
    await ask("Hello?", "garage")
    histories = fake.responder.histories
    assert [m.content for m in histories[1]] == ["Tell me something.",
                                                 "It is noon. Have a nice day."]
    assert histories[2] == []  # another conversation id: its own history
    client.close()


async def test_handle_runs_the_skills_before_the_llm(served: Served) -> None:
    server, fake = served
    client = await connect(server)
    await client.send(Event("transcript", {"text": "What timers do I have?"}))
    handled = await client.next("handled")
    assert handled.data["text"] == "No timers are running."
    assert fake.responder.users == []  # the LLM was never asked
    client.close()


async def test_a_timer_it_could_not_ring_is_not_set_and_it_says_how_to_get_one(
        served: Served) -> None:
    """Home Assistant ends each exchange with its reply: nothing would carry the ring.
    Its own timers ring on the satellite when its pipeline asks its local intents first."""
    server, fake = served
    client = await connect(server)
    for text in ("Set a timer for 10 minutes.", "What timers do I have?"):
        await client.send(Event("transcript", {"text": text, "context":
                                               {"conversation_id": "kitchen"}}))
        handled = await client.next("handled")
        if text.startswith("Set"):
            assert "can't ring a timer" in handled.data["text"]
            assert "prefer handling commands locally" in handled.data["text"]
        else:
            assert handled.data["text"] == "No timers are running."  # none was set
    assert fake.responder.users == []
    client.close()


@pytest.mark.parametrize("events, code", [
    ([Event("detect", {"names": ["ok_nabu"]})], "unknown-event"),
    ([Event("audio-chunk", {"rate": 16000, "width": 2, "channels": 1}, b"\0\0")],
     "audio-before-start"),
    ([Event("audio-stop")], "audio-before-start"),
    ([Event("audio-start", {"rate": 16000, "width": 4, "channels": 1})], "bad-audio-format"),
    ([Event("audio-start", {"rate": "fast", "width": 2, "channels": 1})], "bad-audio-format"),
    ([Event("audio-start", {"rate": 16000, "width": 2, "channels": 1}),
      Event("audio-chunk", {"rate": 16000, "width": 2, "channels": 1}, b"\0")],
     "bad-audio-format"),
    ([Event("synthesize-chunk", {"text": "hi"})], "text-before-start"),
    ([Event("synthesize", {"text": 5})], "bad-request"),
    ([Event("transcript", {})], "bad-request"),
])
async def test_a_bad_request_gets_an_error_event_and_the_connection_goes_on(
        served: Served, events: list[Event], code: str) -> None:
    server, _ = served
    client = await connect(server)
    await client.send(*events)
    error = await client.next("error")
    assert error.data["code"] == code and error.data["text"]
    await client.send(Event("describe"))
    assert (await client.next()).type == "info"
    client.close()


@pytest.mark.parametrize("raw, reason", [
    (b"this is not json\n", "bad header"),
    (b'{"type": "audio-chunk", "payload_length": 999999999}\n', "over the limit"),
    (b"x" * 20000, "longer than"),
])
async def test_a_broken_stream_gets_a_reason_then_the_connection_closes(
        served: Served, raw: bytes, reason: str) -> None:
    server, _ = served
    client = await connect(server)
    await client.send(raw=raw)
    error = await client.next("error")
    assert error.data["code"] == "bad-frame" and reason in error.data["text"]
    assert await client.closed()


async def test_clients_outside_the_allowed_networks_are_told_and_closed() -> None:
    fake = fake_engine()
    server = WyomingServer(fake.engine, ProgramNames(),
                           WyomingOptions(port=0, allow=("10.0.0.0/8",)))
    await server.start()
    try:
        client = await connect(server)
        error = await client.next("error")
        assert error.data["code"] == "forbidden" and await client.closed()
    finally:
        await server.close()
        fake.close()


async def test_connections_beyond_the_limit_are_refused(served: Served) -> None:
    server, _ = served
    clients = [await connect(server) for _ in range(3)]
    extra = await connect(server)
    assert (await extra.next("error")).data["code"] == "busy"
    for client in clients:
        await client.send(Event("ping", {"text": "x"}))
        assert (await client.next()).data == {"text": "x"}
        client.close()


async def test_fuzzed_streams_never_stop_the_server(served: Served) -> None:
    """Bounded fuzz on loopback: mutated valid events and noise, on fresh connections;
    afterwards the server still answers."""
    server, _ = served
    rng = random.Random(7)
    valid = [encode(e) for e in [Event("describe"), Event("ping", {"text": "p"}),
                                 *audio([VOICE, SILENCE]), Event("synthesize-start"),
                                 Event("synthesize-chunk", {"text": "a b"})]]
    for _ in range(25):
        client = await connect(server)
        data = bytearray(b"".join(rng.sample(valid, k=rng.randint(1, len(valid)))))
        for _ in range(rng.randint(0, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        client.writer.write(bytes(data))
        client.writer.write_eof()
        try:
            await client.closed(timeout=5)
        except ConnectionError:
            pass
        client.close()
    client = await connect(server)
    await client.send(Event("describe"))
    assert (await client.next()).type == "info"
    client.close()


async def test_voice_after_the_onset_that_never_resumed_the_turn_still_counts() -> None:
    """A soft last word the room gate takes for the room does not resume the turn, but
    Home Assistant's audio-stop says it is part of the question: the whole audio is
    transcribed, not the speculation that lacks it."""
    import dataclasses

    from app.transports.audio import PcmFormat
    from app.transports.wyoming.service import Listening, ServiceOptions
    from pipeline.listen.vad import Endpointer
    from tests.fakes import TEST_VAD

    fake = fake_engine(["What time is it?"], ["x"])
    try:
        listening = Listening(fake.engine, PcmFormat(rate=16000), ServiceOptions(), classify=any_sound)
        # A gate that doubts the last word: resuming would take 400 ms of voice.
        listening.endpointer = Endpointer(dataclasses.replace(TEST_VAD, resume_ms=400),
                                          any_sound)
        frames = [VOICE] * 10 + [SILENCE] * 4 + [VOICE] * 4  # the stop came mid-word
        for frame in frames:
            listening.push(frame.tobytes())
        assert listening.speculated == 1 and listening.stale
        await listening.finish()
        assert fake.transcriber.calls[-1] == len(frames) * 320  # the whole audio
        # Once the late word has stopped, the onset is raised again: speculated with it.
        again = Listening(fake.engine, PcmFormat(rate=16000), ServiceOptions(), classify=any_sound)
        again.endpointer = Endpointer(dataclasses.replace(TEST_VAD, resume_ms=400), any_sound)
        for frame in frames + [SILENCE] * 2:
            again.push(frame.tobytes())
        assert again.speculated == 2 and not again.stale
        await again.finish()
        assert fake.transcriber.calls[-1] == (len(frames) + 1) * 320  # up to the new onset
        short = Listening(fake.engine, PcmFormat(rate=16000), ServiceOptions(), classify=any_sound)
        short.endpointer = Endpointer(dataclasses.replace(TEST_VAD, resume_ms=400), any_sound)
        for frame in [VOICE] * 10 + [SILENCE] * 4 + [VOICE] * 2 + [SILENCE] * 2:  # a click
            short.push(frame.tobytes())
        assert short.speculated == 1 and not short.stale
    finally:
        fake.close()


async def test_an_utterance_whose_room_is_noisy_is_heard_by_the_noisy_room_ear() -> None:
    from app.transports.audio import PcmFormat
    from app.transports.wyoming.service import Listening, ServiceOptions
    from pipeline.listen.ear import Ear
    from pipeline.listen.vad import Endpointer
    from pipeline.room import Room
    from tests.fakes import TEST_VAD, FakeTranscriber

    class Loud(Room):
        noisy = True

        def noisy_ear(self, t: float) -> bool:
            return self.noisy

    fake = fake_engine(["quiet words"], ["x"])
    noisy = FakeTranscriber("noisy words")
    fake.engine.noisy_ear = Ear(noisy, fake.engine.asr_worker)
    try:
        for loud, heard in ((True, "noisy words"), (False, "quiet words")):
            listening = Listening(fake.engine, PcmFormat(rate=16000), ServiceOptions(),
                                  classify=any_sound)
            room = Loud()
            room.noisy = loud
            listening.endpointer = Endpointer(TEST_VAD, any_sound, room=room)
            for frame in [VOICE] * 10:
                listening.push(frame.tobytes())
            assert await listening.finish() == heard
        assert fake.engine.stats.noisy_ear_replies == 1
        no_room = Listening(fake.engine, PcmFormat(rate=16000), ServiceOptions(),
                            classify=any_sound)  # webrtcvad alone: the one ear
        assert no_room._ear() is fake.engine.ear
    finally:
        fake.close()
