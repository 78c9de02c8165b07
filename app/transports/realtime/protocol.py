"""The OpenAI Realtime protocol's shapes, without I/O: session configuration, item and
response objects, error events, ids.

Event and field names follow the `openai` package's GA Realtime types
(`openai.types.realtime`, openai 3.x): `response.output_audio.delta`,
`conversation.item.added`, `session.audio.input.turn_detection`, ... Audio is PCM16 at
24 kHz both ways (`audio/pcm`), the only rate the protocol defines.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import secrets
from dataclasses import dataclass, replace
from typing import Any

RATE = 24_000
AUDIO_FORMAT = {"type": "audio/pcm", "rate": RATE}
MODEL = "apace"


class ClientError(Exception):
    """A client event apace refuses; answered with an `error` event (the session goes on)."""

    def __init__(self, message: str, code: str = "invalid_request", param: str | None = None,
                 kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.param = param
        self.kind = kind


_counter = itertools.count(1)


def new_id(prefix: str) -> str:
    """`prefix_` + 20 random hex characters, as the API's ids look."""
    return f"{prefix}_{secrets.token_hex(10)}"


def event_id() -> str:
    return f"event_{next(_counter)}"


def error_event(error: ClientError, client_event_id: str | None = None) -> dict[str, Any]:
    return {"type": "error", "event_id": event_id(),
            "error": {"type": error.kind, "code": error.code, "message": error.message,
                      "param": error.param, "event_id": client_event_id}}


@dataclass(frozen=True, kw_only=True)
class SessionConfig:
    """What a client may set with `session.update`, as apace applies it."""

    server_vad: bool = True
    """apace's endpointing ends turns (server_vad / semantic_vad); False: the client commits."""
    audio_out: bool = True
    """output_modalities ["audio"] (the transcript streams beside it) or ["text"]."""
    instructions: str | None = None
    """Kept and echoed only: apace's system prompt is the server's (--system-prompt)."""
    noise_reduction: bool = True
    """Suppress noise in the input (`audio.input.noise_reduction`; null: the client did)."""


def apply_update(config: SessionConfig, session: object) -> SessionConfig:
    """`session.update`'s `session` applied to `config`; raises ClientError naming the field
    apace cannot honour. Fields apace has no use for (voice, tools) are
    accepted and left out of the effective session it reports back."""
    if not isinstance(session, dict):
        raise ClientError("'session' must be an object", param="session")
    kind = session.get("type", "realtime")
    if kind != "realtime":
        raise ClientError(f"session type {kind!r} is not served: apace runs 'realtime' "
                          "sessions", "unsupported_session_type", "session.type")
    # `modalities` is the beta API's name for it (["text", "audio"] or ["text"]).
    for name in ("modalities", "output_modalities"):
        if name in session:
            config = replace(config, audio_out=_modalities(session[name], name))
    if isinstance(session.get("instructions"), str):
        config = replace(config, instructions=session["instructions"][:4000])
    audio = session.get("audio")
    if audio is None:
        return config
    if not isinstance(audio, dict):
        raise ClientError("'session.audio' must be an object", param="session.audio")
    for side in ("input", "output"):
        part = audio.get(side)
        if part is None:
            continue
        if not isinstance(part, dict):
            raise ClientError(f"'session.audio.{side}' must be an object",
                              param=f"session.audio.{side}")
        if "format" in part:
            _check_format(part["format"], f"session.audio.{side}.format")
        if side == "input" and "turn_detection" in part:
            config = replace(config, server_vad=_turn_detection(part["turn_detection"]))
        if side == "input" and "noise_reduction" in part:
            config = replace(config, noise_reduction=_noise_reduction(part["noise_reduction"]))
    return config


def _noise_reduction(value: object) -> bool:
    """near_field / far_field: apace's suppression (one kind for both); null: none."""
    if value is None:
        return False
    if not isinstance(value, dict) or value.get("type") not in ("near_field", "far_field"):
        raise ClientError("noise_reduction must be null or {\"type\": \"near_field\" or "
                          "\"far_field\"}", param="session.audio.input.noise_reduction")
    return True


def _modalities(value: object, name: str) -> bool:
    if value == ["audio"] or value == ["audio", "text"] or value == ["text", "audio"]:
        return True
    if value == ["text"]:
        return False
    raise ClientError(f"{name} must be [\"audio\"] or [\"text\"]", param=f"session.{name}")


def _check_format(value: object, param: str) -> None:
    if not isinstance(value, dict):
        raise ClientError("an audio format is an object", param=param)
    if value.get("type") != "audio/pcm" or value.get("rate", RATE) != RATE:
        raise ClientError(f"apace takes and sends audio/pcm at {RATE} Hz only, not "
                          f"{str(value.get('type'))[:20]} at {str(value.get('rate'))[:8]} Hz",
                          "unsupported_audio_format", param)


def _turn_detection(value: object) -> bool:
    if value is None:
        return False
    if not isinstance(value, dict) or value.get("type") not in ("server_vad", "semantic_vad"):
        raise ClientError("turn_detection must be null, server_vad or semantic_vad",
                          param="session.audio.input.turn_detection")
    if value.get("create_response") is False:
        raise ClientError("create_response false is not supported: apace replies at the "
                          "end of each turn (use turn_detection null to commit yourself)",
                          "unsupported_turn_detection",
                          "session.audio.input.turn_detection.create_response")
    return True


def session_object(config: SessionConfig, session_id: str, *, voice: str, silence_ms: int,
                   prefix_ms: int) -> dict[str, Any]:
    """The effective session, as `session.created` / `session.updated` report it."""
    turn_detection: dict[str, Any] | None = None
    if config.server_vad:
        turn_detection = {"type": "server_vad", "silence_duration_ms": silence_ms,
                          "prefix_padding_ms": prefix_ms, "create_response": True,
                          "interrupt_response": True}
    return {"type": "realtime", "object": "realtime.session", "id": session_id, "model": MODEL,
            "output_modalities": ["audio"] if config.audio_out else ["text"],
            "instructions": config.instructions or "",
            "audio": {"input": {"format": AUDIO_FORMAT, "turn_detection": turn_detection,
                                "transcription": {"model": "whisper"},
                                "noise_reduction": ({"type": "near_field"}
                                                    if config.noise_reduction else None)},
                      "output": {"format": AUDIO_FORMAT, "voice": voice}},
            "tools": [], "tool_choice": "auto"}


def user_text(item: object) -> str:
    """The text of a `conversation.item.create` item apace can answer: a user message of
    `input_text` parts. Anything else is a ClientError."""
    if not isinstance(item, dict):
        raise ClientError("'item' must be an object", param="item")
    if item.get("type", "message") != "message" or item.get("role") != "user":
        raise ClientError("apace takes user messages only (no system, assistant or function "
                          "items)", "unsupported_item", "item.role")
    content = item.get("content")
    if not isinstance(content, list) or not content:
        raise ClientError("a user message needs content", param="item.content")
    texts = []
    for part in content:
        if not isinstance(part, dict) or part.get("type") != "input_text" \
                or not isinstance(part.get("text"), str):
            raise ClientError("user message parts must be input_text (send audio with "
                              "input_audio_buffer.append)", "unsupported_content",
                              "item.content")
        texts.append(part["text"])
    return " ".join(texts).strip()


def decode_audio(value: object, *, max_bytes: int) -> bytes:
    """Base64 PCM16 from `input_audio_buffer.append`, bounded and whole samples."""
    if not isinstance(value, str):
        raise ClientError("'audio' must be base64 text", param="audio")
    if len(value) > max_bytes * 4 // 3 + 4:
        raise ClientError(f"an append carries at most {max_bytes} bytes of audio",
                          "audio_too_large", "audio")
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ClientError("'audio' is not valid base64", param="audio") from None
    if len(data) % 2:
        raise ClientError("PCM16 audio has an even number of bytes", param="audio")
    return data


def encode_audio(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def message_item(item_id: str, role: str, *, status: str, content: list[dict[str, Any]]
                 ) -> dict[str, Any]:
    return {"id": item_id, "object": "realtime.item", "type": "message", "role": role,
            "status": status, "content": content}


def response_object(response_id: str, *, status: str, output: list[dict[str, Any]],
                    audio_out: bool, reason: str | None = None) -> dict[str, Any]:
    details: dict[str, Any] | None = None
    if status != "in_progress":
        details = {"type": status, "reason": reason}
    return {"id": response_id, "object": "realtime.response", "status": status,
            "status_details": details, "output": output,
            "output_modalities": ["audio"] if audio_out else ["text"],
            "conversation_id": None, "usage": None}
