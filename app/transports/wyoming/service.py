"""One Wyoming connection's requests: describe, transcribe, synthesize, handle.

Events arrive in order from the connection (app.transports.wyoming.server) and are
answered through `send`. Each service runs on the engine's shared models and workers:

- **asr**: `transcribe`, `audio-start`, `audio-chunk`… `audio-stop` → `transcript`. Home
  Assistant ends the command, but apace's endpointer listens too: at a silence onset it
  starts transcribing the utterance so far, and if the audio stays silent until
  `audio-stop` that transcript is the answer — the ASR time hides in Home Assistant's
  endpoint wait (speculation: docs/how-it-works.md).
- **tts**: `synthesize`, or `synthesize-start`/`-chunk`…/`-stop` → `audio-start`,
  `audio-chunk`…, `audio-stop` (+ `synthesize-stopped`): text is cut into clauses as it
  streams and each clause's audio goes out as Piper decodes it (levers 5 and the
  streaming decoder).
- **handle**: `transcript` (+ `context.conversation_id`) → `handled-start`,
  `handled-chunk`…, `handled`, `handled-stop`: the Conversation's reply path, history kept
  per id (app.transports.wyoming.conversations).

A request that makes no sense — an unknown event, audio before `audio-start`, a bad
format — gets an `error` event and the connection goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.transports.audio import FormatError, Inbound, PcmFormat
from app.transports.wyoming.conversations import Conversations, HandleError
from app.transports.wyoming.info import ProgramNames, info_event
from app.transports.wyoming.protocol import Event
from pipeline.answer.clauses import ClauseSplitter
from pipeline.compute.workers import Priority
from pipeline.engine import Engine
from pipeline.events import FRAME_MS, SAMPLE_RATE, AudioFrame, Endpoint, Pcm, SilenceOnset
from pipeline.listen.ear import Ear
from pipeline.listen.vad import LATE_VOICE_MS, Endpointer, webrtc_classifier
from pipeline.room import Stream
from pipeline.timeline import now

log = logging.getLogger(__name__)

Send = Callable[[Event], Awaitable[None]]
OUT_FORMAT = {"rate": SAMPLE_RATE, "width": 2, "channels": 1}
"""Reply audio goes out in the pipeline's own format: no second resampling."""
IGNORED = frozenset({"select-program"})
"""Events the protocol says a server may drop silently."""


class ClientError(Exception):
    """A request the client got wrong: answered with an `error` event."""

    def __init__(self, reason: str, code: str = "bad-request") -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


@dataclass(frozen=True, kw_only=True)
class ServiceOptions:
    max_utterance_s: float = 60.0
    """Audio for one transcription; more is refused (the utterance is dropped)."""
    max_text: int = 20_000
    """Characters of text for one synthesis."""
    speculate: bool = True
    """Transcribe at apace's silence onset, before Home Assistant's audio-stop."""


class Listening:
    """One utterance being received for transcription, speculating on its silences."""

    def __init__(self, engine: Engine, fmt: PcmFormat, options: ServiceOptions,
                 classify: Callable[[Pcm], bool] | None = None) -> None:
        self.engine = engine
        self.options = options
        self.inbound = Inbound(fmt)
        self.frames: list[Pcm] = []
        # A satellite streams from its wake word on: the question may start at once.
        # Home Assistant plays the answer: this stream carries no echo reference.
        room = engine.room(Stream(speech_at_once=True, hears_us=False)) if classify is None else None
        self.endpointer = Endpointer(engine.options.vad, classify, room=room)
        self.speculation: asyncio.Task[str] | None = None
        self.speculated = 0
        """Speculative transcriptions started (one per silence the user then kept)."""
        self._voice = classify or webrtc_classifier(engine.options.vad.aggressiveness)
        self._run = 0
        self.stale = False
        """Voice came after the speculation's silence onset without resuming the turn (a
        soft last word the room gate doubted): the speculation lacks it."""

    def push(self, data: bytes) -> None:
        if self.inbound.received_s + self.inbound.format.seconds(len(data)) > \
                self.options.max_utterance_s:
            raise ClientError(f"more than {self.options.max_utterance_s:g} s of audio: "
                              "the utterance is dropped", "too-long")
        self._take(self.inbound.push(data))

    def _take(self, frames: list[Pcm]) -> None:
        for pcm in frames:
            events = self.endpointer.push(AudioFrame(pcm, now()))
            self.frames.append(self.endpointer.heard)  # noise-suppressed where it is raw
            for event in events:
                if isinstance(event, SilenceOnset) and self.options.speculate:
                    self._speculate(event.audio)
                elif not isinstance(event, Endpoint):  # speech started or resumed
                    self.cancel()
            if self.speculation is not None and not self.stale:
                self._run = self._run + 1 if self._voice(pcm) else 0
                self.stale = self._run * FRAME_MS >= LATE_VOICE_MS

    def _speculate(self, audio: Pcm) -> None:
        self.cancel()
        self.speculated += 1
        self._run, self.stale = 0, False
        self.speculation = asyncio.create_task(
            self._ear().transcribe(audio, priority=Priority.SPECULATIVE))

    async def finish(self) -> str:
        """The transcript: the speculation's when the audio stayed silent after it, else
        the whole audio's (Home Assistant's audio-stop bounds the question: every word
        until then is the user's)."""
        self._take(self.inbound.flush())
        speculation, self.speculation = self.speculation, None
        if speculation is not None and self.stale:
            speculation.cancel()
        elif speculation is not None and not speculation.cancelled():
            return (await speculation).strip()
        audio = np.concatenate(self.frames) if self.frames else np.zeros(0, np.int16)
        text = await self._ear().transcribe(audio, priority=Priority.CONFIRMED)
        return text.strip()

    def _ear(self) -> Ear:
        """The noisy-room ear where this utterance's room calls for it (the gate's levels:
        the room while nobody talked, the user's while they did), else the ear."""
        room, noisy = self.endpointer.room, self.engine.noisy_ear
        if noisy is not None and room is not None and room.noisy_ear(now()):
            self.engine.stats.noisy_ear_replies += 1
            return noisy
        return self.engine.ear

    def cancel(self) -> None:
        if self.speculation is not None:
            self.speculation.cancel()
            self.speculation = None


class Speaking:
    """One synthesis: text in (whole or streamed), audio out clause by clause, in order."""

    def __init__(self, engine: Engine, send: Send, options: ServiceOptions) -> None:
        self.engine = engine
        self.send = send
        self.options = options
        self.splitter = ClauseSplitter(engine.options.clauses)
        self.chars = 0
        self._clauses: asyncio.Queue[str | None] = asyncio.Queue()
        self.task = asyncio.create_task(self._run(), name="wyoming-tts")

    def feed(self, text: str) -> None:
        self.chars += len(text)
        if self.chars > self.options.max_text:
            raise ClientError(f"more than {self.options.max_text} characters to speak",
                              "too-long")
        for clause in self.splitter.feed(text):
            self._clauses.put_nowait(clause.text)

    async def finish(self) -> None:
        """All text is in: speak the rest, and return once the audio is sent."""
        for clause in self.splitter.flush():
            self._clauses.put_nowait(clause.text)
        self._clauses.put_nowait(None)
        await self.task

    async def _run(self) -> None:
        engine = self.engine
        await self.send(Event("audio-start", dict(OUT_FORMAT)))
        while (text := await self._clauses.get()) is not None:
            if not text.strip():
                continue
            stream = engine.tts_worker.stream(engine.synthesizer.synthesize, text,
                                              priority=Priority.CONFIRMED)
            async for pcm in stream:
                await self.send(Event("audio-chunk", dict(OUT_FORMAT),
                                      pcm.astype("<i2").tobytes()))
        await self.send(Event("audio-stop", {}))

    def cancel(self) -> None:
        self.task.cancel()


class Handler:
    """The requests of one connection, in order."""

    def __init__(self, engine: Engine, names: ProgramNames, conversations: Conversations,
                 send: Send, options: ServiceOptions | None = None,
                 classify: Callable[[Pcm], bool] | None = None) -> None:
        self.engine = engine
        self.names = names
        self.conversations = conversations
        self.send = send
        self.options = options or ServiceOptions()
        self.classify = classify
        self.language = names.languages[0]
        self.listening: Listening | None = None
        self.speaking: Speaking | None = None
        self.streaming = False
        """A synthesize-start stream is open (a plain `synthesize` then is its copy)."""

    async def handle(self, event: Event) -> None:
        """Answer one event. A client error becomes an `error` event; never raises one."""
        try:
            await self._dispatch(event)
        except ClientError as error:
            await self.error(error.reason, error.code)
        except FormatError as error:
            await self.error(str(error), "bad-audio-format")

    async def error(self, text: str, code: str) -> None:
        await self.send(Event("error", {"text": text, "code": code}))

    async def _dispatch(self, event: Event) -> None:
        kind, data = event.type, event.data
        if kind == "describe":
            await self.send(info_event(self.names))
        elif kind == "ping":
            await self.send(Event("pong", {"text": _text(data, "text", required=False)}))
        elif kind == "transcribe":
            self.language = _text(data, "language", required=False) or self.language
        elif kind in ("audio-start", "audio-chunk", "audio-stop"):
            await self._audio(kind, data, event.payload)
        elif kind in ("synthesize", "synthesize-start", "synthesize-chunk", "synthesize-stop"):
            await self._synthesize(kind, data)
        elif kind == "transcript":
            await self._handle(_text(data, "text"), data.get("context"))
        elif kind not in IGNORED:
            raise ClientError(f"unknown or unsupported event {kind!r}", "unknown-event")

    async def _audio(self, kind: str, data: dict[str, Any], payload: bytes | None) -> None:
        if kind == "audio-start":
            self._stop_listening()
            self.listening = Listening(self.engine, _format(data), self.options, self.classify)
            return
        listening = self.listening
        if listening is None:
            raise ClientError(f"{kind} before audio-start", "audio-before-start")
        if kind == "audio-chunk":
            if _format(data) != listening.inbound.format:
                raise ClientError("audio-chunk format differs from audio-start's",
                                  "bad-audio-format")
            try:
                listening.push(payload or b"")
            except ClientError:
                self._stop_listening()
                raise
            return
        self.listening = None
        text = await listening.finish()
        await self.send(Event("transcript", {"text": text, "language": self.language}))

    async def _synthesize(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "synthesize":
            if self.streaming:
                return  # the copy of a streamed text, for servers that cannot stream
            self._stop_speaking()
            speaking = self.speaking = Speaking(self.engine, self.send, self.options)
            try:
                speaking.feed(_text(data, "text"))
                await speaking.finish()
            finally:
                self._stop_speaking()
        elif kind == "synthesize-start":
            self._stop_speaking()
            self.speaking = Speaking(self.engine, self.send, self.options)
            self.streaming = True
        elif self.speaking is None or not self.streaming:
            raise ClientError(f"{kind} before synthesize-start", "text-before-start")
        elif kind == "synthesize-chunk":
            try:
                self.speaking.feed(_text(data, "text"))
            except ClientError:
                self._stop_speaking()
                raise
        else:
            speaking = self.speaking
            try:
                await speaking.finish()
            finally:
                self._stop_speaking()
            await self.send(Event("synthesize-stopped", {}))

    async def _handle(self, text: str, context: object) -> None:
        conversation_id = "default"
        if isinstance(context, dict) and isinstance(context.get("conversation_id"), str | int):
            conversation_id = str(context["conversation_id"])[:128]
        reply_context = {"conversation_id": conversation_id}
        if not text.strip():
            await self.send(Event("not-handled", {"text": "Nothing was said.",
                                                  "context": reply_context}))
            return
        await self.send(Event("handled-start", {"context": reply_context}))
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        writer = asyncio.create_task(self._chunks(queue))
        try:
            reply = await self.conversations.ask(conversation_id, text, queue.put_nowait)
        except HandleError as error:
            writer.cancel()
            await asyncio.wait([writer])
            await self.send(Event("not-handled", {"text": str(error), "context": reply_context}))
            return
        finally:
            queue.put_nowait(None)
        await writer
        await self.send(Event("handled", {"text": reply, "context": reply_context}))
        await self.send(Event("handled-stop", {}))

    async def _chunks(self, queue: asyncio.Queue[str | None]) -> None:
        while (text := await queue.get()) is not None:
            await self.send(Event("handled-chunk", {"text": text}))

    def _stop_listening(self) -> None:
        if self.listening is not None:
            self.listening.cancel()
            self.listening = None

    def _stop_speaking(self) -> None:
        if self.speaking is not None:
            self.speaking.cancel()
            self.speaking = None
        self.streaming = False

    def close(self) -> None:
        """The connection ended: stop whatever it had started."""
        self._stop_listening()
        self._stop_speaking()


def _text(data: dict[str, Any], key: str, *, required: bool = True) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise ClientError(f"'{key}' must be a string", "bad-request")
    return value


def _format(data: dict[str, Any]) -> PcmFormat:
    def number(key: str) -> int:
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise FormatError(f"audio '{key}' must be an integer, got {value!r:.40}")
        return value

    return PcmFormat(rate=number("rate"), width=number("width"), channels=number("channels"))
