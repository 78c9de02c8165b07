"""One browser session: a peer connection, its data channel, and one conversation.

Sessions are owned by the server's `Sessions` registry. However a session ends — the peer
closed or failed, its audio went silent, it never connected, it grew too old, the server
shut down — `close()` cancels its conversation and its watchdog and closes the peer
connection; nothing outlives it.

A session's slot is bounded from the offer on, not from when its conversation starts: a
peer must connect within `connect_timeout`, deliver audio within `idle_timeout` of the
offer (and never pause longer), and the session ends at `max_age` whatever it does.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
from collections.abc import Callable

from aiortc import MediaStreamTrack, RTCDataChannel, RTCPeerConnection

from app.security.limits import RateLimit, Refused, parse_json
from app.transports.webrtc.tracks import SpeakerTrack, mic_frames, shorten_jitter_buffer
from pipeline.conversation import Conversation
from pipeline.conversation_events import Error, GoingAway, Pong, Ready, Turn, WireEvent, to_wire
from pipeline.engine import Engine
from pipeline.room import Stream
from pipeline.speaker import Speaker
from pipeline.timeline import now

log = logging.getLogger(__name__)

MAX_CLIENT_MESSAGE = 4096
MAX_MESSAGE_DEPTH = 4
"""The page's messages are flat objects; anything deeper is refused unparsed."""
MESSAGE_RATE = 20.0
MESSAGE_BURST = 40
"""Data-channel messages per second, sustained and at once. The page sends five quick
pings at connect, then one every 2 s, and one message per reply."""
MAX_PENDING_EVENTS = 256
FLUSH_S = 0.5
"""At close, how long buffered data-channel events may take to leave."""
RECANCEL_S = 0.5
"""How long closing waits for a cancelled task before cancelling it again."""
_ids = itertools.count(1)


class Session:
    def __init__(
        self,
        pc: RTCPeerConnection,
        engine: Engine,
        *,
        idle_timeout: float,
        on_turn: Callable[[Session, Turn], None],
        on_closed: Callable[[Session], None],
        on_heard: Callable[[Session, Turn], None] | None = None,
        jitter_hold: int = 1,
        connect_timeout: float = 15.0,
        max_age: float = 3600.0,
        stream: Stream | None = None,
    ) -> None:
        self.id = next(_ids)
        self.jitter_hold = jitter_hold
        self.pc = pc
        self.engine = engine
        self.idle_timeout = idle_timeout
        self.connect_timeout = connect_timeout
        self.max_age = max_age
        self.stream = stream or Stream()
        """What the browser did to the microphone (the room gate's per-stream settings)."""
        self.speaker = Speaker()
        self.speaker_track = SpeakerTrack(self.speaker)
        self.channel: RTCDataChannel | None = None
        self.task: asyncio.Task[None] | None = None
        self.conversation: Conversation | None = None
        self.started = now()
        self.end_reason = "closed"
        """Why the session ended (for metrics): the first reason set wins."""
        self._connected = asyncio.Event()
        self._watchdog: asyncio.Task[None] | None = None
        self._rate = RateLimit(MESSAGE_RATE, MESSAGE_BURST)
        self._limited_at = -math.inf
        self._pending: list[str] = []
        self._on_turn = on_turn
        self._on_heard = on_heard
        self._on_closed = on_closed
        self._closed = False
        self._closer: asyncio.Task[None] | None = None
        pc.on("track", self._on_track)
        pc.on("datachannel", self._on_datachannel)
        pc.on("connectionstatechange", self._on_state)

    def begin(self) -> None:
        """Start the watchdog that bounds the session's life (call once, in the loop)."""
        if self._watchdog is None and not self._closed:
            self._watchdog = asyncio.get_running_loop().create_task(
                self._watch(), name=f"session-{self.id}-watchdog")

    @property
    def busy(self) -> bool:
        """A reply is being prepared or is still playing."""
        conversation = self.conversation
        return (conversation is not None and conversation.busy) or self.speaker.queued_frames > 0

    def _on_track(self, track: MediaStreamTrack) -> None:
        if track.kind != "audio" or self.task is not None:
            log.warning("session %s: ignoring an extra %s track", self.id, track.kind)
            return
        self.pc.addTrack(self.speaker_track)
        shorten_jitter_buffer(self.pc, track, self.jitter_hold)
        self.task = asyncio.get_running_loop().create_task(self._converse(track))

    async def _converse(self, track: MediaStreamTrack) -> None:
        try:
            async with self.engine.open(self.speaker, emit=self.emit,
                                        on_turn=lambda turn: self._on_turn(self, turn),
                                        stream=self.stream) as conv:
                self.conversation = conv
                self.emit(Ready())
                # The idle clock runs from the offer, not from when the context was ready.
                first = max(0.5, self.started + self.idle_timeout - now())
                await conv.run(mic_frames(track, self.idle_timeout, first_timeout=first))
            log.info("session %s: microphone ended", self.id)
            self._ending("idle")
        except Exception:
            log.exception("session %s failed", self.id)
            self._ending("failed")
            self.emit(Error("the conversation failed on the server"))
        finally:
            self.task = None
            self.conversation = None
            # Owned by the session; close() never cancels the task that called it.
            self._closer = asyncio.get_running_loop().create_task(self.close())

    async def _watch(self) -> None:
        """Close a session that does not connect in time, and any at its maximum age.
        Cancelled by close()."""
        try:
            async with asyncio.timeout(self.connect_timeout):
                await self._connected.wait()
        except TimeoutError:
            log.info("session %s: not connected within %g s", self.id, self.connect_timeout)
            await self.close("never connected")
            return
        await asyncio.sleep(max(0.0, self.started + self.max_age - now()))
        self.going_away(f"the session reached its maximum age ({self.max_age:g} s): reconnect")
        await self.close("max age")

    def _on_datachannel(self, channel: RTCDataChannel) -> None:
        self.channel = channel
        channel.on("message", self._on_message)
        pending, self._pending = self._pending, []
        for message in pending:
            channel.send(message)

    def _on_message(self, message: object) -> None:
        """A message from the page. Never raises: an exception here escapes into aiortc's
        receive loop and ends this session's data channel for good."""
        try:
            self._handle(message)
        except Exception:
            log.exception("session %s: data channel message failed", self.id)
            self.emit(Error("the server could not handle that message"))

    def _handle(self, message: object) -> None:
        if not self._rate.allow(now()):
            if now() - self._limited_at >= 1.0:  # one complaint a second, not one per message
                self._limited_at = now()
                self.emit(Error(f"too many data channel messages (limit {MESSAGE_RATE:g}/s): "
                                "some were dropped"))
            return
        if not isinstance(message, str):
            self.emit(Error("data channel messages must be JSON text under 4 KB"))
            return
        try:
            data = parse_json(message, max_bytes=MAX_CLIENT_MESSAGE, max_depth=MAX_MESSAGE_DEPTH)
        except Refused as refused:
            self.emit(Error(f"data channel message refused: {refused.reason}"))
            return
        kind = data.get("type") if isinstance(data, dict) else None
        if not isinstance(kind, str):
            self.emit(Error("data channel message is not JSON with a 'type'"))
        elif kind == "ping":
            t = data.get("t")
            number = isinstance(t, (int, float)) and not isinstance(t, bool)
            self.emit(Pong(t if number else None, server_t=now()))
        elif kind == "audio_onset":
            self._on_audio_onset(data.get("server_t"))

    def _on_audio_onset(self, server_t: object) -> None:
        """The page heard reply audio start at `server_t` (already on the server's clock):
        the browser TTFA of the reply it belongs to."""
        if (isinstance(server_t, bool) or not isinstance(server_t, (int, float))
                or not math.isfinite(server_t)):
            self.emit(Error("audio_onset needs 'server_t': a finite number of seconds on the "
                            "server's clock"))
            return
        conv = self.conversation
        if conv is None:
            return  # the conversation has not started or has ended: nothing to stamp
        # Usually the reply is still playing; if its turn was already recorded, the
        # records must learn of the stamp too.
        turn = conv.heard_at(float(server_t))
        if turn is not None and self._on_heard is not None:
            self._on_heard(self, turn)

    async def _on_state(self) -> None:
        state = self.pc.connectionState
        if state == "connected":
            self._connected.set()
        elif state in ("failed", "closed"):
            await self.close(f"peer {state}")

    def emit(self, event: WireEvent) -> None:
        """Send an event to the page (queued until its data channel opens)."""
        message = json.dumps(to_wire(event))
        channel = self.channel
        if channel is not None and channel.readyState == "open":
            channel.send(message)
        elif channel is None and len(self._pending) < MAX_PENDING_EVENTS:
            self._pending.append(message)

    def going_away(self, message: str, retry_after_s: float | None = None) -> None:
        """Tell the page the server is about to end this session, and why."""
        self.emit(GoingAway(message, retry_after_s))

    async def _flush(self, within_s: float = FLUSH_S) -> None:
        """Let events already sent (the last turn, a going-away notice) leave before the
        peer connection closes: closing drops what the data channel still buffers."""
        channel = self.channel
        deadline = now() + within_s
        while (channel is not None and channel.readyState == "open"
               and channel.bufferedAmount > 0 and now() < deadline):
            await asyncio.sleep(0.02)

    @property
    def closing(self) -> bool:
        """Closing or closed: it no longer counts against the cap or the load."""
        return self._closed

    def _ending(self, reason: str) -> None:
        if self.end_reason == "closed" and not self._closed:
            self.end_reason = reason

    async def close(self, reason: str | None = None) -> None:
        """End the session (`reason` for the metrics, unless one was set); idempotent.
        Cancel-safe."""
        if reason is not None:
            self._ending(reason)
        if self._closed:
            return
        self._closed = True
        current = asyncio.current_task()
        tasks = [t for t in (self.task, self._watchdog) if t is not None and t is not current]
        pending = set(tasks)
        while pending:  # a cancellation a task lost (see mic_frames) is sent again
            for task in pending:
                task.cancel()
            # asyncio.wait does not re-raise the tasks' cancellation.
            _, pending = await asyncio.wait(pending, timeout=RECANCEL_S)
        self.speaker.clear()
        self.speaker_track.stop()
        await self._flush()
        await self.pc.close()
        self._on_closed(self)
        log.info("session %s closed (%s)", self.id, self.end_reason)
