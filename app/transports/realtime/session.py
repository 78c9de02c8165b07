"""One Realtime connection: client events in, one Conversation, server events out.

    input_audio_buffer.append ─► 24→16 kHz ─► Conversation.run (apace's endpointing,
        speculation, skills, LLM, TTS — the browser's path)
    endpointer events ─► input_audio_buffer.speech_started / speech_stopped / committed
    Conversation events ─► transcription, response.*, transcript deltas
    Speaker ─► paced 20 ms frames ─► 16→24 kHz ─► response.output_audio.delta

Reply audio leaves at the pace it plays (app.transports.pacing.Pacer), so that what the
conversation records as heard is what the client played: a barge-in — new speech, or
`response.cancel` — truncates the item as the browser path does. Every client error is
answered with an `error` event; the session goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from app.security.limits import RateLimit, Refused, parse_json
from app.transports.audio import Inbound, Outbound, PcmFormat
from app.transports.pacing import Pacer
from app.transports.realtime import commands
from app.transports.realtime.options import RealtimeOptions
from app.transports.realtime.protocol import (
    RATE,
    ClientError,
    SessionConfig,
    error_event,
    event_id,
    message_item,
    new_id,
    session_object,
)
from app.transports.realtime.response import Response
from pipeline.conversation import Conversation
from pipeline.conversation_events import (
    BargeIn,
    ConversationEvent,
    Error,
    ReplyDelta,
    TimerFired,
    TimerList,
    Transcript,
    Turn,
    to_wire,
)
from pipeline.conversation_options import TransportNeeds
from pipeline.engine import Engine
from pipeline.events import FRAME_MS, SAMPLE_RATE, AudioFrame, Endpoint, Pcm, SpeechStarted, VadEvent
from pipeline.room import Stream
from pipeline.speaker import Speaker
from pipeline.timeline import now

log = logging.getLogger(__name__)

Send = Callable[[dict[str, Any]], Awaitable[None]]
IDLE_POLL_S = 0.005
"""How often an idle speaker is looked at: a reply's first frame waits at most this."""
APACE_EVENTS = (TimerList, TimerFired, BargeIn, Turn)
"""Conversation events a client that asked for `?apace_events=1` also gets, as `apace.*`
(the running timers, a timer that rang, a barge-in, a finished turn)."""


class RealtimeSession:
    def __init__(self, engine: Engine, send: Send, options: RealtimeOptions | None = None, *,
                 classify: Callable[[Pcm], bool] | None = None,
                 on_turn: Callable[[Turn], None] | None = None) -> None:
        self.engine = engine
        self.send = send
        self.options = options or RealtimeOptions()
        self.classify = classify
        self.on_turn = on_turn
        self.id = new_id("sess")
        self.config = SessionConfig()
        self.speaker = Speaker()
        self.conversation: Conversation | None = None
        self.inbound = Inbound(PcmFormat(rate=RATE))
        self.outbound = Outbound(RATE)
        self.pacer = Pacer(lead_s=self.options.lead_ms / 1000)
        self.response: Response | None = None
        self.pending_audio: list[Pcm] = []
        """Appended, not yet committed (turn_detection null)."""
        self.committed_audio: list[Pcm] = []
        self.pending_text: str | None = None
        self.user_item: str | None = None
        self.last_item: str | None = None
        self.items_ms: dict[str, tuple[float, str]] = {}
        """Recent assistant items: (audio ms sent, full transcript), for truncation."""
        self._frames_in: asyncio.Queue[AudioFrame | None] = asyncio.Queue()
        self._outbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._rate = RateLimit(self.options.message_rate, self.options.message_burst)
        self._limited_at = -1e9
        self._in_push = False
        self._deferred: list[SpeechStarted | Endpoint | ConversationEvent] = []
        self._fed_ms = 0.0
        self._frame_t = 0.0
        self._caption = ""
        self.audio_seconds = 0.0
        """Length of the last user audio item (the transcription's usage)."""
        self.stop = asyncio.Event()
        """Set to end the session now (shutdown, or a client that does not read)."""
        self.overflowed = False
        """The client let `max_outbox` events pile up: it is cut off."""

    # --- running ---------------------------------------------------------------------------

    async def run(self, messages: AsyncIterator[str | bytes]) -> None:
        """Serve the connection until `messages` ends (the client left) or it idles out.
        `session.created` goes out once the conversation (its LLM context) is ready;
        until then the client's events wait in order — read all along, so the socket's
        pings are answered however long the context takes to open. Cancel-safe: the
        conversation and every task of the session stop."""
        inbox: asyncio.Queue[str | bytes | None] = asyncio.Queue()
        pump = asyncio.create_task(self._pump(messages, inbox), name="realtime-pump")
        try:
            # A client may stream its microphone from the first event on.
            async with self.engine.open(self.speaker, emit=self._emit, on_turn=self.on_turn,
                                        stream=Stream(speech_at_once=True),
                                        needs=TransportNeeds(on_vad=self._on_vad,
                                                             classify=self.classify)) as conversation:
                self.conversation = conversation
                self.post({"type": "session.created", "event_id": event_id(),
                           "session": self.session_object()})
                await self._serve(conversation, inbox)
        finally:
            pump.cancel()
            await asyncio.wait([pump])

    async def _serve(self, conversation: Conversation,
                     inbox: asyncio.Queue[str | bytes | None]) -> None:
        async with asyncio.TaskGroup() as group:
            writer = group.create_task(self._write(), name="realtime-writer")
            runner = group.create_task(conversation.run(self._frames()),
                                       name="realtime-conversation")
            player = group.create_task(self._play(), name="realtime-player")
            reader = group.create_task(self._read(inbox), name="realtime-reader")
            cut = group.create_task(self.stop.wait())
            try:
                await asyncio.wait([reader, cut], return_when=asyncio.FIRST_COMPLETED)
            finally:
                reader.cancel()
                cut.cancel()
                self._frames_in.put_nowait(None)
                player.cancel()
                await asyncio.wait([runner])
                self._outbox.put_nowait(None)  # the writer sends what is queued, then ends
                await asyncio.wait([writer], timeout=0 if self.overflowed else 2.0)
                writer.cancel()

    async def _pump(self, messages: AsyncIterator[str | bytes],
                    inbox: asyncio.Queue[str | bytes | None]) -> None:
        """Read the socket into `inbox` from the start; a client far ahead of the session
        (`max_outbox` events unread by it) is cut off."""
        try:
            async for message in messages:
                if inbox.qsize() >= self.options.max_outbox:
                    log.warning("realtime session %s: the client sends faster than it is "
                                "served: closing", self.id)
                    self.overflowed = True
                    self.stop.set()
                    return
                inbox.put_nowait(message)
        finally:
            inbox.put_nowait(None)

    async def _read(self, inbox: asyncio.Queue[str | bytes | None]) -> None:
        while True:
            try:
                async with asyncio.timeout(self.options.idle_timeout_s):
                    message = await inbox.get()
            except TimeoutError:
                self.post(error_event(ClientError("idle too long: closing", "idle_timeout")))
                return
            if message is None:
                return
            self.receive(message)

    def receive(self, message: str | bytes) -> None:
        """One client message. Never raises for anything the client sent."""
        if not self._rate.allow(now()):
            if now() - self._limited_at >= 1.0:
                self._limited_at = now()
                self.post(error_event(ClientError(
                    f"more than {self.options.message_rate:g} messages/s: some were dropped",
                    "rate_limited")))
            return
        client_id = None
        try:
            try:
                data = parse_json(message, max_bytes=self.options.max_message_bytes, max_depth=8)
            except Refused as refused:
                raise ClientError(f"message refused: {refused.reason}", "invalid_json") from None
            if not isinstance(data, dict) or not isinstance(data.get("type"), str):
                raise ClientError("a client event is a JSON object with a 'type'", "invalid_event")
            client_id = data.get("event_id") if isinstance(data.get("event_id"), str) else None
            commands.dispatch(self, data)
        except ClientError as error:
            self.post(error_event(error, client_id))

    async def _write(self) -> None:
        while (event := await self._outbox.get()) is not None:
            try:
                await self.send(event)
            except Exception as error:  # the client is gone: nothing more to tell it
                log.debug("realtime session %s: send failed: %r", self.id, error)
                return

    def post(self, event: dict[str, Any]) -> None:
        """Queue an event for the client (in order). A client that has let
        `max_outbox` events pile up is cut off (`overflowed`), not buffered for."""
        if self.overflowed:
            return
        if self._outbox.qsize() >= self.options.max_outbox:
            log.warning("realtime session %s: the client does not read: closing", self.id)
            self.overflowed = True
            self.stop.set()
            return
        self._outbox.put_nowait(event)

    def session_object(self) -> dict[str, Any]:
        vad = self.engine.options.vad
        return session_object(self.config, self.id, voice=self.engine.synthesizer.voice_id,
                              silence_ms=vad.endpoint_ms, prefix_ms=vad.pre_roll_ms)

    # --- audio in --------------------------------------------------------------------------

    def append(self, data: bytes) -> None:
        frames = self.inbound.push(data)
        if not self.config.server_vad:
            if (len(self.pending_audio) + len(frames)) * FRAME_MS / 1000 > self.options.max_buffer_s:
                raise ClientError(f"more than {self.options.max_buffer_s:g} s of uncommitted "
                                  "audio: commit or clear it", "input_audio_buffer_full")
            self.pending_audio += frames
            return
        for pcm in frames:
            self._frames_in.put_nowait(AudioFrame(pcm, now()))

    def flush_input(self) -> None:
        """The client ended its audio (a manual commit): what the resampler still holds
        is taken too, and the next append starts a new stream."""
        self.pending_audio += self.inbound.flush()
        self.inbound = Inbound(PcmFormat(rate=RATE))

    async def _frames(self) -> AsyncIterator[AudioFrame]:
        """The conversation's microphone. Events raised while it handles a frame are
        deferred to after it, so the client hears 'speech stopped' before the response."""
        while (frame := await self._frames_in.get()) is not None:
            self._fed_ms += FRAME_MS
            self._frame_t = frame.t
            self._in_push = True
            yield frame
            self._in_push = False
            deferred, self._deferred = self._deferred, []
            for event in deferred:
                self._handle(event)

    def _on_vad(self, events: list[VadEvent]) -> None:
        for event in events:
            if isinstance(event, SpeechStarted | Endpoint):
                self._deferred.append(event)

    def _emit(self, event: ConversationEvent) -> None:
        if self._in_push:
            self._deferred.append(event)
        else:
            self._handle(event)

    def _handle(self, event: SpeechStarted | Endpoint | ConversationEvent) -> None:
        try:
            if isinstance(event, SpeechStarted | Endpoint):
                self._vad(event)
            else:
                self._conversation_event(event)
        except Exception:  # a bug here must not end the conversation's reply task
            log.exception("realtime session %s: %s failed", self.id, type(event).__name__)

    def _vad(self, event: SpeechStarted | Endpoint) -> None:
        if isinstance(event, SpeechStarted):
            self.user_item = new_id("item")
            self._caption = ""
            start = self._fed_ms - (self._frame_t - event.t) * 1000
            self.post({"type": "input_audio_buffer.speech_started", "event_id": event_id(),
                       "audio_start_ms": max(0, round(start)), "item_id": self.user_item})
            return
        item = self.user_item or new_id("item")
        end = self._fed_ms - (event.t - event.speech_end) * 1000
        self.post({"type": "input_audio_buffer.speech_stopped", "event_id": event_id(),
                   "audio_end_ms": max(0, round(end)), "item_id": item})
        self.add_user_item(item, audio=True, seconds=len(event.audio) / SAMPLE_RATE)
        conversation = self.conversation
        if conversation is not None and conversation.busy and self.response is None:
            self.open_response()

    def add_user_item(self, item: str, *, audio: bool, text: str = "", seconds: float = 0.0
                      ) -> None:
        """The user's turn as an item: committed audio (its transcript comes later) or text."""
        self.audio_seconds = seconds
        if audio:
            self.post({"type": "input_audio_buffer.committed", "event_id": event_id(),
                       "previous_item_id": self.last_item, "item_id": item})
        content = [{"type": "input_audio", "transcript": None}] if audio \
            else [{"type": "input_text", "text": text}]
        user = message_item(item, "user", status="completed", content=content)
        self.post({"type": "conversation.item.added", "event_id": event_id(),
                   "previous_item_id": self.last_item, "item": user})
        if not audio:
            self.post({"type": "conversation.item.done", "event_id": event_id(),
                       "previous_item_id": self.last_item, "item": user})
        self.user_item = self.last_item = item

    # --- conversation events ---------------------------------------------------------------

    def _conversation_event(self, event: ConversationEvent) -> None:
        if isinstance(event, APACE_EVENTS) and self.options.apace_events:
            self.post({**to_wire(event), "type": f"apace.{event.type}", "event_id": event_id()})
        match event:
            case Transcript(text=text, final=final):
                self._transcript(text, final=final)
            case ReplyDelta(text=text):
                response = self.response or self.open_response()
                self.post(response.text(text))
            case BargeIn() if self.response is not None:
                self.response.cancel_reason = self.response.cancel_reason or "turn_detected"
            case Turn():
                self._turn(event)
            case Error(message=message):
                self.post(error_event(ClientError(message, "server_error", kind="server_error")))
                self.close_response(failed=message)

    def _transcript(self, text: str, *, final: bool) -> None:
        item = self.response.user_item if self.response and self.response.user_item \
            else self.user_item
        if item is None:
            return
        if final:
            self.post({"type": "conversation.item.input_audio_transcription.completed",
                       "event_id": event_id(), "item_id": item, "content_index": 0,
                       "transcript": text,
                       "usage": {"type": "duration", "seconds": round(self.audio_seconds, 2)}})
        elif text.startswith(self._caption):  # captions are whole: send what is new
            delta, self._caption = text[len(self._caption):], text
            if delta:
                self.post({"type": "conversation.item.input_audio_transcription.delta",
                           "event_id": event_id(), "item_id": item, "content_index": 0,
                           "delta": delta})

    def _turn(self, turn: Turn) -> None:
        heard = turn.heard if turn.interrupted else None
        if self.response is not None:
            self.items_ms[self.response.item_id] = (self.response.audio_ms, turn.reply)
            self.close_response(heard=heard)

    def open_response(self) -> Response:
        response = Response(self.config.audio_out, user_item=self.user_item)
        self.outbound.reset()
        for event in response.open(self.last_item):
            self.post(event)
        self.response = response
        self.last_item = response.item_id
        return response

    def close_response(self, *, heard: str | None = None, failed: str | None = None) -> None:
        response, self.response = self.response, None
        if response is None:
            return
        tail = self.outbound.flush()  # (what the resampler held back: a cut reply drops it)
        if tail and response.audio_out and response.cancel_reason is None and not failed:
            self.post(response.audio(tail, 0.0))
        for event in response.close(heard=heard, failed=failed):
            self.post(event)
        while len(self.items_ms) > 16:
            self.items_ms.pop(next(iter(self.items_ms)))

    # --- audio out -------------------------------------------------------------------------

    async def _play(self) -> None:
        """Pop the speaker at the pace it plays; send each frame as an audio delta."""
        loop = asyncio.get_running_loop()
        while True:
            if self.config.audio_out and (wait := self.pacer.wait_s(loop.time())) > 0:
                await asyncio.sleep(wait)
            pcm = self.speaker.pop()
            if pcm is None:
                self.pacer.idle()
                self._idle()
                await asyncio.sleep(IDLE_POLL_S)
                continue
            self.pacer.sent(loop.time())
            response = self.response or self.open_response()
            if self.config.audio_out and (data := self.outbound.push(pcm)):
                self.post(response.audio(data, FRAME_MS))
            else:
                response.audio_ms += FRAME_MS  # (held in the resampler, or text only)

    def _idle(self) -> None:
        """Nothing to play: a response not driven by a reply (a timer ringing) is done."""
        conversation = self.conversation
        if self.response is not None and conversation is not None and not conversation.busy:
            self.close_response()
