"""One browser session: a peer connection, its data channel, and one conversation.

Sessions are owned by the server's `Sessions` registry. However a session ends — the peer
closed or failed, its audio went silent, the server shut down — `close()` cancels its
conversation task and closes the peer connection; nothing outlives it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
from collections.abc import Callable
from typing import Any

from aiortc import MediaStreamTrack, RTCDataChannel, RTCPeerConnection

from app.webrtc import SpeakerTrack, mic_frames, shorten_jitter_buffer
from pipeline.conversation import Conversation, Turn
from pipeline.engine import Engine
from pipeline.speaker import Speaker
from pipeline.timeline import TTFA_BROWSER, now

log = logging.getLogger(__name__)

MAX_CLIENT_MESSAGE = 4096
MAX_PENDING_EVENTS = 256
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
    ) -> None:
        self.id = next(_ids)
        self.jitter_hold = jitter_hold
        self.pc = pc
        self.engine = engine
        self.idle_timeout = idle_timeout
        self.speaker = Speaker()
        self.speaker_track = SpeakerTrack(self.speaker)
        self.channel: RTCDataChannel | None = None
        self.task: asyncio.Task[None] | None = None
        self.conversation: Conversation | None = None
        self.started = now()
        self._pending: list[str] = []
        self._on_turn = on_turn
        self._on_heard = on_heard
        self._on_closed = on_closed
        self._closed = False
        self._closer: asyncio.Task[None] | None = None
        pc.on("track", self._on_track)
        pc.on("datachannel", self._on_datachannel)
        pc.on("connectionstatechange", self._on_state)

    def _on_track(self, track: MediaStreamTrack) -> None:
        if track.kind != "audio" or self.task is not None:
            return
        self.pc.addTrack(self.speaker_track)
        shorten_jitter_buffer(self.pc, track, self.jitter_hold)
        self.task = asyncio.get_running_loop().create_task(self._converse(track))

    async def _converse(self, track: MediaStreamTrack) -> None:
        try:
            async with self.engine.open(self.speaker, emit=self.emit,
                                        on_turn=lambda turn: self._on_turn(self, turn)) as conv:
                self.conversation = conv
                self.emit("ready", {})
                await conv.run(mic_frames(track, self.idle_timeout))
            log.info("session %s: microphone ended", self.id)
        except Exception:
            log.exception("session %s failed", self.id)
            self.emit("error", {"message": "the conversation failed on the server"})
        finally:
            self.task = None
            self.conversation = None
            # Owned by the session; close() never cancels the task that called it.
            self._closer = asyncio.get_running_loop().create_task(self.close())

    def _on_datachannel(self, channel: RTCDataChannel) -> None:
        self.channel = channel
        channel.on("message", self._on_message)
        pending, self._pending = self._pending, []
        for message in pending:
            channel.send(message)

    def _on_message(self, message: object) -> None:
        if not isinstance(message, str) or len(message) > MAX_CLIENT_MESSAGE:
            self.emit("error", {"message": "data channel messages must be JSON text under 4 KB"})
            return
        try:
            data = json.loads(message)
            kind = data["type"]
        except (ValueError, TypeError, KeyError):
            self.emit("error", {"message": "data channel message is not JSON with a 'type'"})
            return
        if kind == "ping":
            self.emit("pong", {"t": data.get("t"), "server_t": now()})
        elif kind == "audio_onset":
            self._on_audio_onset(data.get("server_t"))

    def _on_audio_onset(self, server_t: object) -> None:
        """The page heard reply audio start at `server_t` (already on the server's clock):
        the browser TTFA of the reply it belongs to."""
        if (isinstance(server_t, bool) or not isinstance(server_t, (int, float))
                or not math.isfinite(server_t)):
            self.emit("error", {"message": "audio_onset needs 'server_t': a finite number of "
                                           "seconds on the server's clock"})
            return
        conv = self.conversation
        if conv is None:
            return  # the conversation has not started or has ended: nothing to stamp
        # Usually the reply is still playing; if its turn was already recorded, the
        # records must learn of the stamp too.
        recorded = [turn for turn in conv.turns[-2:] if not turn.timeline.has(TTFA_BROWSER)]
        conv.heard_at(float(server_t))
        for turn in recorded:
            if turn.timeline.has(TTFA_BROWSER) and self._on_heard is not None:
                self._on_heard(self, turn)

    async def _on_state(self) -> None:
        if self.pc.connectionState in ("failed", "closed"):
            await self.close()

    def emit(self, kind: str, data: dict[str, Any]) -> None:
        """Send an event to the page (queued until its data channel opens)."""
        message = json.dumps({"type": kind, **data})
        channel = self.channel
        if channel is not None and channel.readyState == "open":
            channel.send(message)
        elif channel is None and len(self._pending) < MAX_PENDING_EVENTS:
            self._pending.append(message)

    async def close(self) -> None:
        """End the session; idempotent. Cancel-safe."""
        if self._closed:
            return
        self._closed = True
        task = self.task
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            await asyncio.wait([task])  # waits without re-raising the task's cancellation
        self.speaker.clear()
        self.speaker_track.stop()
        await self.pc.close()
        self._on_closed(self)
        log.info("session %s closed", self.id)
