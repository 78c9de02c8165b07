"""One Realtime response's events, from `response.created` to `response.done`, without I/O.

A response is one assistant message item with one content part: audio with its
transcript streaming beside it (`output_modalities: ["audio"]`), or text alone. The
session calls `open`, `text`, `audio`, `close` in order and sends what each returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.transports.realtime.protocol import (
    encode_audio,
    event_id,
    message_item,
    new_id,
    response_object,
)


@dataclass
class Response:
    audio_out: bool
    user_item: str | None = None
    """The user item it answers (None: audio nobody asked for, a timer ringing)."""
    id: str = field(default_factory=lambda: new_id("resp"))
    item_id: str = field(default_factory=lambda: new_id("item"))
    transcript: str = ""
    audio_ms: float = 0.0
    """Milliseconds of reply audio sent."""
    cancel_reason: str | None = None
    """Why it is being cancelled ("turn_detected", "client_cancelled"), once it is."""

    def _where(self) -> dict[str, Any]:
        return {"event_id": event_id(), "response_id": self.id, "item_id": self.item_id,
                "output_index": 0, "content_index": 0}

    def _part(self) -> dict[str, Any]:
        if self.audio_out:
            return {"type": "audio", "transcript": self.transcript}
        return {"type": "text", "text": self.transcript}

    def _item(self, status: str) -> dict[str, Any]:
        content = [] if status == "in_progress" else [
            {"type": "output_audio", "transcript": self.transcript} if self.audio_out
            else {"type": "output_text", "text": self.transcript}]
        return message_item(self.item_id, "assistant", status=status, content=content)

    def open(self, previous_item: str | None) -> list[dict[str, Any]]:
        item = self._item("in_progress")
        return [
            {"type": "response.created", "event_id": event_id(),
             "response": response_object(self.id, status="in_progress", output=[],
                                         audio_out=self.audio_out)},
            {"type": "response.output_item.added", "event_id": event_id(),
             "response_id": self.id, "output_index": 0, "item": item},
            {"type": "conversation.item.added", "event_id": event_id(),
             "previous_item_id": previous_item, "item": item},
            {"type": "response.content_part.added", **self._where(), "part": self._part()},
        ]

    def text(self, delta: str) -> dict[str, Any]:
        self.transcript += delta
        kind = "response.output_audio_transcript.delta" if self.audio_out \
            else "response.output_text.delta"
        return {"type": kind, **self._where(), "delta": delta}

    def audio(self, pcm16: bytes, ms: float) -> dict[str, Any]:
        self.audio_ms += ms
        return {"type": "response.output_audio.delta", **self._where(),
                "delta": encode_audio(pcm16)}

    def close(self, *, heard: str | None = None, failed: str | None = None
              ) -> list[dict[str, Any]]:
        """The closing events. `heard`: an interrupted reply's transcript becomes what was
        heard of it; `failed`: the reply failed with this message."""
        if heard is not None:
            self.transcript = heard
        status = "failed" if failed else "cancelled" if self.cancel_reason else "completed"
        item_status = "completed" if status == "completed" else "incomplete"
        events: list[dict[str, Any]] = []
        if self.audio_out:
            events += [{"type": "response.output_audio.done", **self._where()},
                       {"type": "response.output_audio_transcript.done", **self._where(),
                        "transcript": self.transcript}]
        else:
            events.append({"type": "response.output_text.done", **self._where(),
                           "text": self.transcript})
        item = self._item(item_status)
        response = response_object(self.id, status=status, output=[item],
                                   audio_out=self.audio_out, reason=self.cancel_reason)
        if failed:
            response["status_details"]["error"] = {"type": "server_error", "message": failed}
        return [
            *events,
            {"type": "response.content_part.done", **self._where(), "part": self._part()},
            {"type": "response.output_item.done", "event_id": event_id(), "response_id": self.id,
             "output_index": 0, "item": item},
            {"type": "conversation.item.done", "event_id": event_id(), "item": item},
            {"type": "response.done", "event_id": event_id(), "response": response},
        ]
