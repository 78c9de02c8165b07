"""Malformed offers for the fuzz test: broken JSON, deep nesting, compressed bodies,
garbled SDPs, extra media, bodies sent chunked, slowly or oversized. Every one of them
must be answered with a 4xx; `malformed_offers` makes them from one valid SDP with a
seeded generator, so a failure can be replayed."""

from __future__ import annotations

import gzip
import json
import random
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

MAX_BODY = 64 * 1024


@dataclass(frozen=True)
class Case:
    category: str
    body: bytes
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    send: str = "plain"
    """plain, chunked (aiohttp chunked transfer), or slow (chunked, with pauses)."""
    statuses: range = range(400, 500)


def _offer(sdp: str, **extra: object) -> bytes:
    return json.dumps({"sdp": sdp, "type": "offer", **extra}).encode()


def _lines(sdp: str) -> list[str]:
    return [line for line in sdp.split("\r\n") if line]


def _join(lines: list[str]) -> str:
    return "\r\n".join(lines) + "\r\n"


def garbled_sdps(sdp: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    """(kind, sdp) pairs, each broken in a way apace refuses (4xx)."""
    lines = _lines(sdp)
    audio = next(i for i, line in enumerate(lines) if line.startswith("m=audio"))
    credentials = next(i for i, line in enumerate(lines) if line.startswith("a=ice-ufrag"))
    required = ("v=", "m=audio", "a=ice-ufrag", "a=ice-pwd", "a=fingerprint", "a=rtcp-mux",
                "a=setup", "a=rtpmap", "a=sendrecv")
    controls = [chr(c) for c in [*range(0, 9), 11, 12, *range(14, 32), 127]]
    mutations: list[Callable[[], tuple[str, str]]] = [
        lambda: ("drop-required", _without(lines, rng.choice(required))),
        lambda: ("truncated", _join(lines[:rng.randrange(0, credentials)])),
        lambda: ("control-char", _insert(sdp, rng.choice(controls), rng)),
        lambda: ("garbage-line", _join(_put(lines, rng, "#" + "".join(
            rng.choice("abc xyz:;=/0123") for _ in range(rng.randrange(0, 80)))))),
        lambda: ("upper-case-type", _join(_put(lines, rng, rng.choice(lines[1:]).upper()))),
        lambda: ("direction", _join([f"a={rng.choice(['recvonly', 'inactive'])}"
                                     if line == "a=sendrecv" else line for line in lines])),
        lambda: ("no-codec", _join([line.replace("opus", "xopus").replace("PCM", "XPCM")
                                    for line in lines])),
        lambda: ("bad-m-line", _join([rng.choice(["m=audio x", "m=audio", "m= 9 RTP 0",
                                                  f"m=audio {rng.random()} RTP"])
                                      if i == audio else line for i, line in enumerate(lines)])),
        lambda: ("dns-candidate", _join([_named(line, f"h{rng.randrange(99)}.example")
                                         for line in lines])),
        lambda: ("many-candidates", _join(_put(lines, rng, *[
            next(line for line in lines if line.startswith("a=candidate"))] * 40, at=audio + 1))),
        lambda: ("too-many-lines", sdp + "a=x\r\n" * rng.randrange(400, 1000)),
        lambda: ("long-line", _join(_put(lines, rng, "a=x" + "y" * rng.randrange(2100, 9000)))),
        lambda: ("v-not-first", _join([*lines[1:rng.randrange(2, 6)], lines[0],
                                       *lines[rng.randrange(6, 9):]])),
        lambda: ("empty", rng.choice(["", " ", "\r\n", "v=0", "v=1\r\n"])),
    ]
    extra_media: list[Callable[[], tuple[str, str]]] = [
        lambda: ("extra-video", sdp + _section("video", rng.randrange(2, 9), "VP8/90000")),
        lambda: ("extra-audio", sdp + _section("audio", rng.randrange(2, 9), "opus/48000/2")),
        lambda: ("extra-text", sdp + _section("text", 2, "t140/1000")),
        lambda: ("many-m-lines", sdp + "".join(_section("audio", mid, "opus/48000/2")
                                               for mid in range(2, rng.randrange(6, 101)))),
    ]
    while True:
        yield rng.choice(mutations if rng.random() < 0.8 else extra_media)()


def _without(lines: list[str], prefix: str) -> str:
    return _join([line for line in lines if not line.startswith(prefix)])


def _named(line: str, host: str) -> str:
    """A candidate line with its address replaced by `host` (other lines as they are)."""
    if not line.startswith("a=candidate:"):
        return line
    fields = line.split(" ")
    return " ".join([*fields[:4], host, *fields[5:]])


def _insert(text: str, piece: str, rng: random.Random) -> str:
    at = rng.randrange(0, len(text) - 2)
    while text[at] in "\r\n" or text[at - 1] == "\r":
        at -= 1
    return text[:at] + piece + text[at:]


def _put(lines: list[str], rng: random.Random, *new: str, at: int | None = None) -> list[str]:
    index = rng.randrange(1, len(lines)) if at is None else at
    return [*lines[:index], *new, *lines[index:]]


def _section(kind: str, mid: int, codec: str) -> str:
    return _join([f"m={kind} 9 UDP/TLS/RTP/SAVPF 96", "c=IN IP4 127.0.0.1", f"a=mid:{mid}",
                  "a=sendrecv", f"a=rtpmap:96 {codec}"])


def json_cases(sdp: str, rng: random.Random) -> Iterator[Case]:
    body = _offer(sdp)
    while True:
        choice = rng.randrange(8)
        depth = rng.randrange(17, 30_000)
        if choice == 0:
            yield Case("nesting", (b"[" * depth + b"]" * depth)[:MAX_BODY], statuses=range(400, 401))
        elif choice == 1:
            yield Case("nesting", b'{"sdp": ' + b'{"a":' * min(depth, 9000) + b"1"
                       + b"}" * min(depth, 9000) + b', "type": "offer"}', statuses=range(400, 401))
        elif choice == 2:
            yield Case("truncated-json", body[:rng.randrange(0, len(body) - 1)])
        elif choice == 3:
            at = rng.randrange(0, len(body))
            yield Case("not-utf8", body[:at] + bytes([rng.randrange(0xF8, 0x100)]) + body[at:])
        elif choice == 4:
            yield Case("wrong-shape", json.dumps(rng.choice([
                [], "offer", None, 42, {"type": "offer"}, {"sdp": 5, "type": "offer"},
                {"sdp": sdp, "type": "answer"}, {"sdp": sdp, "type": ["offer"]},
                {"sdp": [sdp], "type": "offer"}])).encode())
        elif choice == 5:
            yield Case("content-type", body, {"Content-Type": rng.choice([
                "text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                "application/sdp"])}, statuses=range(415, 416))
        elif choice == 6:
            yield _encoded(body, rng)
        else:
            size = rng.randrange(MAX_BODY + 1, 4 * MAX_BODY)
            yield Case("oversize", _offer("x" * size), send=rng.choice(["plain", "chunked"]),
                       statuses=range(413, 414))


def _encoded(body: bytes, rng: random.Random) -> Case:
    encoding = rng.choice(["gzip", "deflate", "br", "zstd", "gzip, gzip", "compress"])
    data = rng.choice([gzip.compress(body), zlib.compress(body), body, b"\x1f\x8b garbage"])
    return Case("content-encoding", data, {"Content-Type": "application/json",
                                           "Content-Encoding": encoding},
                statuses=range(415, 416))


def malformed_offers(sdp: str, count: int, seed: int = 7) -> list[Case]:
    """`count` malformed offers: about half garbled SDPs in good JSON, half broken JSON
    or HTTP; one in eight of them sent chunked, one in eight slowly."""
    rng = random.Random(seed)
    sdps, others = garbled_sdps(sdp, rng), json_cases(sdp, rng)
    cases = []
    for _ in range(count):
        if rng.random() < 0.5:
            kind, garbled = next(sdps)
            case = Case(kind, _offer(garbled))
        else:
            case = next(others)
        if case.send == "plain" and "Content-Encoding" not in case.headers:
            roll = rng.random()
            send = "chunked" if roll < 0.125 else "slow" if roll < 0.25 else "plain"
            case = Case(case.category, case.body, case.headers, send, case.statuses)
        cases.append(case)
    return cases
