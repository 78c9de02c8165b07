"""What each Realtime client event does to a session.

One small function per event type (`openai.types.realtime` names). Each either changes
the session and queues the server's answer, or raises ClientError (answered with an
`error` event by the session).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from app.transports.realtime.protocol import (
    ClientError,
    apply_update,
    decode_audio,
    event_id,
    new_id,
    user_text,
)
from pipeline.events import FRAME_MS

if TYPE_CHECKING:
    from app.transports.realtime.session import RealtimeSession

Command = Callable[["RealtimeSession", dict[str, Any]], None]


def dispatch(session: RealtimeSession, data: dict[str, Any]) -> None:
    command = COMMANDS.get(data["type"])
    if command is None:
        raise ClientError(f"unknown or unsupported client event {data['type'][:64]!r}",
                          "unknown_event", "type")
    command(session, data)


def session_update(session: RealtimeSession, data: dict[str, Any]) -> None:
    session.config = apply_update(session.config, data.get("session"))
    if session.conversation is not None:  # text only: no speech made, not just not sent
        session.conversation.speak_replies(session.config.audio_out)
    room = session.conversation.room if session.conversation is not None else None
    if room is not None:  # the client says whether it suppressed noise itself
        room.conditioning = session.config.noise_reduction and room.options.conditioning
    session.post({"type": "session.updated", "event_id": event_id(),
                  "session": session.session_object()})


def append(session: RealtimeSession, data: dict[str, Any]) -> None:
    session.append(decode_audio(data.get("audio"), max_bytes=session.options.max_append_bytes))


def commit(session: RealtimeSession, data: dict[str, Any]) -> None:
    if session.config.server_vad:
        raise ClientError("with server_vad apace commits at the end of each turn; set "
                          "turn_detection to null to commit yourself", "commit_with_server_vad")
    session.flush_input()
    if not session.pending_audio:
        raise ClientError("the input audio buffer is empty", "input_audio_buffer_commit_empty")
    seconds = len(session.pending_audio) * FRAME_MS / 1000
    session.committed_audio += session.pending_audio
    session.pending_audio = []
    session.pending_text = None
    session.add_user_item(new_id("item"), audio=True, seconds=seconds)


def clear(session: RealtimeSession, data: dict[str, Any]) -> None:
    session.pending_audio = []
    session.post({"type": "input_audio_buffer.cleared", "event_id": event_id()})


def item_create(session: RealtimeSession, data: dict[str, Any]) -> None:
    item = data.get("item")
    text = user_text(item)
    if not text:
        raise ClientError("the user message is empty", param="item.content")
    given = item.get("id") if isinstance(item, dict) else None
    item_id = given[:64] if isinstance(given, str) and given else new_id("item")
    session.pending_text, session.committed_audio = text, []
    session.add_user_item(item_id, audio=False, text=text)


def response_create(session: RealtimeSession, data: dict[str, Any]) -> None:
    conversation = session.conversation
    if conversation is None:
        raise ClientError("the session is not ready yet", "session_not_ready")
    if session.response is not None or conversation.busy:
        raise ClientError("a response is already in progress: cancel it first",
                          "conversation_already_has_active_response")
    if session.pending_text is not None:
        started = conversation.start_turn(text=session.pending_text)
    elif session.committed_audio:
        started = conversation.start_turn(audio=np.concatenate(session.committed_audio))
    else:
        raise ClientError("nothing to respond to: commit audio or create a user message "
                          "first", "no_input")
    if not started:
        raise ClientError("the conversation cannot start a response now",
                          "conversation_already_has_active_response")
    session.pending_text, session.committed_audio = None, []
    session.open_response()


def response_cancel(session: RealtimeSession, data: dict[str, Any]) -> None:
    response, conversation = session.response, session.conversation
    if response is None or conversation is None:
        raise ClientError("there is no response in progress", "response_cancel_not_active")
    response.cancel_reason = "client_cancelled"
    if not conversation.interrupt(reason="client_cancelled"):
        session.speaker.clear()  # audio without a reply behind it (a timer): just stop it
        session.close_response()


def item_truncate(session: RealtimeSession, data: dict[str, Any]) -> None:
    """The client played only `audio_end_ms` of an assistant item: what the conversation
    remembers of it is cut to that (and a reply still playing is stopped)."""
    item_id, end_ms = data.get("item_id"), data.get("audio_end_ms")
    if isinstance(end_ms, bool) or not isinstance(end_ms, int) or end_ms < 0:
        raise ClientError("'audio_end_ms' must be a non-negative integer", param="audio_end_ms")
    response, conversation = session.response, session.conversation
    if response is not None and item_id == response.item_id and conversation is not None:
        response.cancel_reason = "client_cancelled"
        conversation.interrupt(reason="client_cancelled")
    if item_id not in session.items_ms:
        raise ClientError(f"no assistant item {str(item_id)[:64]!r} to truncate",
                          "item_truncate_invalid_item_id", "item_id")
    sent_ms, text = session.items_ms[item_id]
    if conversation is not None and item_id == session.last_item:
        conversation.truncate_last_reply(text, end_ms / sent_ms if sent_ms else 0.0)
    session.post({"type": "conversation.item.truncated", "event_id": event_id(),
                  "item_id": item_id, "content_index": 0, "audio_end_ms": end_ms})


def unsupported(session: RealtimeSession, data: dict[str, Any]) -> None:
    raise ClientError(f"{data['type']} is not supported by apace", "unsupported_event", "type")


COMMANDS: dict[str, Command] = {
    "session.update": session_update,
    "input_audio_buffer.append": append,
    "input_audio_buffer.commit": commit,
    "input_audio_buffer.clear": clear,
    "conversation.item.create": item_create,
    "conversation.item.truncate": item_truncate,
    "conversation.item.delete": unsupported,
    "conversation.item.retrieve": unsupported,
    "response.create": response_create,
    "response.cancel": response_cancel,
    "output_audio_buffer.clear": response_cancel,
}
