"""Bounds on what a client may send: request bodies, JSON, and message rates.

Every check turns hostile input into `Refused` — a 4xx status and a reason the client can
read — so nothing a client sends reaches a 5xx, and nothing reaches a parser that could
recurse without bound (json.loads on `[[[[…` raises RecursionError, and inside a library's
callback that error kills whatever loop called it).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

BODY_TIMEOUT_S = 10.0
"""A whole request body must arrive within this long: a client that trickles one byte a
second would otherwise hold a handler (and its memory) for as long as it likes."""
MAX_JSON_DEPTH = 16
"""A real offer is two levels deep; a data-channel message is one."""


class Refused(Exception):
    """A request refused with `status` (4xx/503) and a reason in JSON. `kind` says which
    rule refused it, for the metrics: access, input, full, draining."""

    def __init__(self, status: int, reason: str, headers: Mapping[str, str] | None = None,
                 *, kind: str = "input") -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.headers = dict(headers or {})
        self.kind = kind

    def response(self) -> web.Response:
        return web.json_response({"error": self.reason}, status=self.status, headers=self.headers)


def refusals(on_refused: Callable[[Refused], None] | None = None) -> Any:
    """A middleware answering a `Refused` raised anywhere below it (an inner middleware
    or a handler) with its status and JSON reason, after telling `on_refused`.

    A refused request's connection is closed once the answer is sent (`Connection:
    close`): kept alive, each one would hold a socket and its handler task for as long
    as the client liked (the keep-alive timeout), and a client that was just refused —
    a malformed offer, a foreign Origin, a full server — has no business on it."""

    @web.middleware
    async def refuse(request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            response: web.StreamResponse = await handler(request)
        except Refused as refused:
            if on_refused is not None:
                on_refused(refused)
            answer = refused.response()
            answer.force_close()
            return answer
        return response

    return refuse


async def read_body(request: web.Request, *, limit: int, timeout_s: float = BODY_TIMEOUT_S) -> bytes:
    """The whole body, however it arrives (in pieces, chunked, slowly), at most `limit`
    bytes within `timeout_s`. Compressed bodies are refused: a few KB of gzip can inflate
    to gigabytes, and nothing apace serves needs them. Cancel-safe."""
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise Refused(415, f"Content-Encoding {encoding!r} is not accepted: send the body "
                           "uncompressed")
    if request.content_length is not None and request.content_length > limit:
        raise Refused(413, f"body too large ({request.content_length} bytes; limit {limit})")
    body = bytearray()
    try:
        async with asyncio.timeout(timeout_s):
            while chunk := await request.content.readany():
                body += chunk
                if len(body) > limit:
                    raise Refused(413, f"body too large (over {limit} bytes)")
    except TimeoutError:
        raise Refused(408, f"the body did not arrive within {timeout_s:g} s") from None
    except HttpProcessingError as error:  # a malformed chunked encoding, a short body
        raise Refused(400, f"the body could not be read: {error.message}") from None
    except ConnectionError:  # the client left mid-body: refused, not an error with a trace
        raise Refused(400, "the connection closed before the body was complete") from None
    return bytes(body)


_JSON_SPECIAL = re.compile(r'[\\"\[\]{}]')


def json_depth(text: str) -> int:
    """How deeply arrays and objects nest in `text` (strings skipped), in one linear pass
    that never recurses; malformed text gets a number too (json.loads then refuses it)."""
    depth = deepest = 0
    in_string = False
    skip_to = -1
    for match in _JSON_SPECIAL.finditer(text):
        at, char = match.start(), match.group()
        if at < skip_to:
            continue  # the character after a backslash is escaped, whatever it is
        if in_string:
            if char == "\\":
                skip_to = at + 2
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(depth - 1, 0)
    return deepest


def parse_json(data: bytes | str, *, max_bytes: int, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """JSON from an untrusted client, or `Refused(400)` saying what is wrong with it."""
    if len(data) > max_bytes:
        raise Refused(413, f"JSON too large ({len(data)} bytes; limit {max_bytes})")
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        raise Refused(400, "the body is not UTF-8 text") from None
    if (depth := json_depth(text)) > max_depth:
        raise Refused(400, f"JSON nested {depth} levels deep (limit {max_depth})")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise Refused(400, "the body is not valid JSON") from None


@dataclass
class RateLimit:
    """A token bucket: `burst` messages at once, `rate` per second sustained. Pure
    arithmetic on the times it is given, so it is tested without a clock."""

    rate: float
    burst: float
    tokens: float = field(init=False)
    at: float | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.rate <= 0 or self.burst < 1:
            raise ValueError("a rate limit needs rate > 0 and burst >= 1")
        self.tokens = self.burst

    def allow(self, now: float) -> bool:
        """Take one token at time `now` (seconds, any monotonic clock) if there is one."""
        if self.at is not None:
            self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True
