"""A Wyoming client for `apace bench --quality --transport wyoming`: each question goes
through apace the way Home Assistant's voice pipeline sends a satellite's audio.

Per question, as Home Assistant does (a connection per request, the `wyoming` package):
`transcribe` with the audio streamed at real-time pace and `audio-stop` once it is all
sent (the utterance's own trailing silence stands in for Home Assistant's end-of-speech
wait); the transcript to the conversation agent (`transcript` with a conversation id per
client, so the history is kept); its `handled-chunk`s streamed into `synthesize-start/
-chunk/-stop` on a TTS connection as they arrive. Reply audio is recorded with its arrival
time and level on this client's clock; each exchange ends with a `turn` record made by
the server's own serializer, so the quality bench scores it the same way. Wyoming has no barge-in
and no events after a reply: an interruption point is a normal turn, and timers cannot
ring (apace says so over Wyoming).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from app.transports.client_audio import Received, wait_event
from app.transports.pacing import FrameClock
from pipeline import conversation_events as wire
from pipeline.audio import frames
from pipeline.events import SAMPLE_RATE, Pcm
from pipeline.timeline import SPEECH_END, Timeline, now

CHUNK = 1024
"""Samples per audio-chunk (64 ms), as satellites send."""
READ_TIMEOUT_S = 60.0


class WyomingClient:
    """One Home Assistant conversation with apace over Wyoming (`tcp://host:port`)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme != "tcp" or not parts.hostname or not parts.port:
            raise ValueError(f"a Wyoming server is tcp://HOST:PORT, not {url!r}")
        self.host, self.port = parts.hostname, parts.port
        self.conversation_id = uuid.uuid4().hex[:12]
        self.events: list[dict[str, Any]] = []
        self.new_event = asyncio.Event()
        self.received = Received()
        self.failed: str | None = None
        self._exchanges: list[asyncio.Task[None]] = []
        self._turns = 0

    async def connect(self) -> None:
        """Ask the server what it offers (Home Assistant's `describe`): a refusal or no
        answer is a ConnectionError."""
        from wyoming.info import Describe, Info

        client = await self._open()
        try:
            await client.write_event(Describe().event())
            event = await client.read_event()
            if event is None or not Info.is_type(event.type):
                raise ConnectionError("the Wyoming server did not describe itself")
        finally:
            await client.disconnect()

    @property
    def connection_failed(self) -> bool:
        return self.failed is not None

    async def close(self) -> None:
        for task in self._exchanges:
            task.cancel()
        if self._exchanges:
            await asyncio.wait(self._exchanges)
        self._exchanges = []

    async def say(self, pcm: Pcm, speech_end_sample: int | None = None) -> float:
        """Stream `pcm` to `transcribe` at real-time pace; returns once it is all sent,
        with the time the chunk holding `speech_end_sample` left. The rest of the
        exchange (transcript, agent, speech) goes on in the background."""
        from wyoming.asr import Transcribe
        from wyoming.audio import AudioChunk, AudioStart, AudioStop

        client = await self._open()
        end = len(pcm) - 1 if speech_end_sample is None else speech_end_sample
        spoke_until = 0.0
        try:
            await client.write_event(Transcribe(language="en").event())
            await client.write_event(AudioStart(rate=SAMPLE_RATE, width=2, channels=1).event())
            clock = FrameClock(SAMPLE_RATE, CHUNK)
            for index, chunk in enumerate(frames(pcm, CHUNK, last="keep")):
                await clock.tick()
                await client.write_event(AudioChunk(rate=SAMPLE_RATE, width=2, channels=1,
                                                    audio=chunk.astype("<i2").tobytes()).event())
                if index == end // CHUNK:
                    spoke_until = now()
            await clock.tick()  # audio-stop once the last chunk has played out
            await client.write_event(AudioStop().event())
        except (OSError, ConnectionError) as error:
            await client.disconnect()
            self.failed = f"transcribe: {error}"
            raise ConnectionError(self.failed) from None
        self._exchanges.append(asyncio.create_task(self._exchange(client, spoke_until),
                                                   name="wyoming-exchange"))
        return spoke_until

    async def _exchange(self, asr: Any, speech_end: float) -> None:
        from wyoming.asr import Transcript

        try:
            try:
                event = await asr.read_event()
            finally:
                await asr.disconnect()
            if event is None or not Transcript.is_type(event.type):
                raise ConnectionError(f"expected a transcript, got {event and event.type}")
            text = Transcript.from_event(event).text or ""
            self._event(wire.Transcript(text, final=True))
            reply = await self._handle_and_speak(text) if text.strip() else ""
            self._turns += 1
            self._event(wire.Turn(self._turns, text, reply, heard=reply, interrupted=False,
                                  timeline=Timeline(stamps={SPEECH_END: speech_end})))
        except (OSError, ConnectionError, TimeoutError) as error:
            self.failed = f"{type(error).__name__}: {error}"
            self._event(wire.Error(self.failed))

    async def _handle_and_speak(self, text: str) -> str:
        """The agent's reply, its chunks spoken as they arrive (Home Assistant's streaming
        TTS); returns once all of the reply's audio has arrived."""
        from wyoming.asr import Transcript
        from wyoming.handle import Handled, HandledChunk
        from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop

        agent, tts = await self._open(), await self._open()
        listening = asyncio.create_task(self._listen(tts), name="wyoming-tts-read")
        try:
            await tts.write_event(SynthesizeStart().event())
            await agent.write_event(Transcript(
                text=text, context={"conversation_id": self.conversation_id}).event())
            while True:
                event = await agent.read_event()
                if event is None:
                    raise ConnectionError("the agent closed the connection")
                if HandledChunk.is_type(event.type):
                    await tts.write_event(SynthesizeChunk(
                        text=HandledChunk.from_event(event).text).event())
                elif Handled.is_type(event.type):
                    reply = Handled.from_event(event).text or ""
                    break
            await tts.write_event(Synthesize(text=reply).event())
            await tts.write_event(SynthesizeStop().event())
            async with asyncio.timeout(READ_TIMEOUT_S):
                await listening
            return reply
        finally:
            listening.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await listening
            await agent.disconnect()
            await tts.disconnect()

    async def _listen(self, tts: Any) -> None:
        from wyoming.audio import AudioChunk, AudioStop

        while (event := await tts.read_event()) is not None:
            if AudioChunk.is_type(event.type):
                chunk = AudioChunk.from_event(event)
                self.received.hear(np.frombuffer(chunk.audio, "<i2"), now())
            elif AudioStop.is_type(event.type):
                return

    async def _open(self) -> Any:
        from wyoming.client import AsyncTcpClient

        client = AsyncTcpClient(self.host, self.port, connect_timeout=10.0,
                                read_timeout=READ_TIMEOUT_S)
        try:
            await client.connect()
        except OSError as error:
            raise ConnectionError(f"cannot reach the Wyoming server: {error}") from None
        return client

    def _event(self, event: wire.WireEvent) -> None:
        self.events.append({"received": now(), **wire.to_wire(event)})
        self.new_event.set()

    async def wait_for(self, kind: str, *, after: int = 0, timeout: float = 30.0
                       ) -> dict[str, Any]:
        return await wait_event(self.events, self.new_event, kind, after=after, timeout=timeout)
