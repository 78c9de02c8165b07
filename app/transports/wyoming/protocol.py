"""Wyoming framing, without I/O: bytes in → events, events → bytes.

An event is one JSON header line — `type`, optional `data`, `data_length`,
`payload_length` — then `data_length` bytes of JSON merged into `data`, then
`payload_length` bytes of payload (PCM audio). The `wyoming` package reads with
`readline` and `readexactly(payload_length)` and no limits; here every length is bounded
before anything is buffered, and a stream that cannot be read on raises `FramingError`
(the connection is closed with its reason). A well-framed event that makes no sense is
the handler's business (an `error` event back; the connection goes on).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from app.security.limits import Refused, parse_json

VERSION = "1.8.0"
"""The protocol version apace writes in its headers (what the `wyoming` package of that
version writes; readers ignore it)."""


@dataclass(frozen=True, kw_only=True)
class Limits:
    max_header: int = 16 * 1024
    """A header line; real ones are under 1 KB."""
    max_data: int = 256 * 1024
    """The extra JSON after the header (Home Assistant puts `info` and long texts there)."""
    max_payload: int = 1024 * 1024
    """One payload: ~32 s of 16 kHz 16-bit mono; clients send ~64 ms chunks."""
    max_depth: int = 8
    max_type: int = 64


class FramingError(Exception):
    """The byte stream is not Wyoming (or breaks a limit): it cannot be read on."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Event:
    type: str
    data: dict[str, Any] = field(default_factory=dict)
    payload: bytes | None = None


def encode(event: Event) -> bytes:
    """One event on the wire (the extra-data form, as the `wyoming` package writes it)."""
    header: dict[str, Any] = {"type": event.type, "version": VERSION}
    data = json.dumps(event.data, ensure_ascii=False).encode() if event.data else b""
    if data:
        header["data_length"] = len(data)
    if event.payload:
        header["payload_length"] = len(event.payload)
    return b"".join((json.dumps(header).encode(), b"\n", data, event.payload or b""))


class Decoder:
    """Feed bytes as they arrive; take whole events."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._buffer = bytearray()
        self._header: dict[str, Any] | None = None
        self._lengths = (0, 0)

    @property
    def mid_event(self) -> bool:
        """Bytes of an unfinished event are held (the stream ended inside one?)."""
        return bool(self._buffer) or self._header is not None

    def feed(self, chunk: bytes) -> list[Event]:
        """The events `chunk` completes; raises FramingError if the stream is broken."""
        self._buffer += chunk
        events = []
        while (event := self._next()) is not None:
            events.append(event)
        return events

    def _next(self) -> Event | None:
        while self._header is None:
            end = self._buffer.find(b"\n")
            if end < 0:
                if len(self._buffer) > self.limits.max_header:
                    raise FramingError(f"header line longer than {self.limits.max_header} bytes")
                return None
            if end > self.limits.max_header:
                raise FramingError(f"header line longer than {self.limits.max_header} bytes")
            line = bytes(self._buffer[:end]).strip()
            del self._buffer[: end + 1]
            if line:  # (a blank line between events is skipped)
                self._header = self._parse_header(line)
        data_length, payload_length = self._lengths
        if len(self._buffer) < data_length + payload_length:
            return None
        header, self._header = self._header, None
        data = dict(header.get("data") or {})
        if data_length:
            extra = self._json(bytes(self._buffer[:data_length]), "data")
            if not isinstance(extra, dict):
                raise FramingError("the data after the header is not a JSON object")
            data.update(extra)
        payload = bytes(self._buffer[data_length : data_length + payload_length]) or None
        del self._buffer[: data_length + payload_length]
        return Event(header["type"], data, payload)

    def _parse_header(self, line: bytes) -> dict[str, Any]:
        header = self._json(line, "header")
        if not isinstance(header, dict):
            raise FramingError("the header is not a JSON object")
        kind = header.get("type")
        if not isinstance(kind, str) or not kind or len(kind) > self.limits.max_type:
            raise FramingError("the header has no event 'type' (a short string)")
        data = header.get("data")
        if data is not None and not isinstance(data, dict):
            raise FramingError("the header's 'data' is not a JSON object")
        self._lengths = (self._length(header, "data_length", self.limits.max_data),
                         self._length(header, "payload_length", self.limits.max_payload))
        return header

    @staticmethod
    def _length(header: dict[str, Any], key: str, limit: int) -> int:
        value = header.get(key)
        if value is None:
            return 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise FramingError(f"'{key}' must be a non-negative integer")
        if value > limit:
            raise FramingError(f"'{key}' {value} is over the limit of {limit} bytes")
        return value

    def _json(self, raw: bytes, what: str) -> Any:
        try:
            return parse_json(raw, max_bytes=max(self.limits.max_header, self.limits.max_data),
                              max_depth=self.limits.max_depth)
        except Refused as refused:
            raise FramingError(f"bad {what}: {refused.reason}") from None
