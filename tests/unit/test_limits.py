"""Hostile-input bounds: JSON depth and size, and the data-channel rate limit."""

from __future__ import annotations

import json
import time

import pytest

from app.security.limits import RateLimit, Refused, json_depth, parse_json


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ('{"sdp": "v=0", "type": "offer"}', 1),
        ("[[1, [2]], {}]", 3),
        ('{"a": "[[[[{{{{"}', 1),
        (r'{"a": "quote \" then [[[[ still a string"}', 1),
        (r'{"a": "backslash \\", "b": [[1]]}', 3),
        ("[[[[", 4),
        ("]]]]", 0),
        ("42", 0),
    ],
    ids=["offer", "nested", "brackets-in-string", "escaped-quote", "escaped-backslash",
         "unclosed", "unopened", "scalar"],
)
def test_json_depth_counts_nesting_outside_strings(text: str, depth: int) -> None:
    assert json_depth(text) == depth


def test_json_depth_agrees_with_the_json_module_on_what_it_parses() -> None:
    value = {"a": [{"b": ["]", "\\", {"c": '"{['}]}], "d": "}"}
    assert json_depth(json.dumps(value)) == 5


def test_json_depth_is_linear_on_adversarial_quoting() -> None:
    """Quotes and backslashes that would make a regex backtrack quadratically."""
    text = '"' + '\\"' * 32_000
    started = time.perf_counter()
    json_depth(text)
    assert time.perf_counter() - started < 0.5


def test_deep_nesting_is_refused_without_recursing() -> None:
    for deep in ("[" * 100_000 + "]" * 100_000, '{"a":' * 5000 + "1" + "}" * 5000):
        with pytest.raises(Refused) as refused:
            parse_json(deep, max_bytes=1_000_000)
        assert refused.value.status == 400 and "nested" in refused.value.reason


def test_depth_limit_is_inclusive() -> None:
    assert parse_json("[[[1]]]", max_bytes=100, max_depth=3) == [[[1]]]
    with pytest.raises(Refused, match="nested 4 levels"):
        parse_json("[[[[1]]]]", max_bytes=100, max_depth=3)


@pytest.mark.parametrize(
    ("data", "status", "reason"),
    [
        (b"\xff\xfe{}", 400, "UTF-8"),
        (b'{"a": ', 400, "not valid JSON"),
        (b"1" * 5000, 400, "not valid JSON"),  # past int's digit limit: ValueError
        (b"[" + b"0," * 6000 + b"0]", 413, "too large"),
    ],
    ids=["not-utf8", "truncated", "huge-int", "too-large"],
)
def test_bad_json_is_refused_with_a_reason(data: bytes, status: int, reason: str) -> None:
    with pytest.raises(Refused) as refused:
        parse_json(data, max_bytes=10_000)
    assert refused.value.status == status and reason in refused.value.reason


def test_refused_answers_json_with_its_status_and_headers() -> None:
    response = Refused(503, "full", {"Retry-After": "5"}, kind="full").response()
    assert response.status == 503
    assert response.headers["Retry-After"] == "5"
    assert response.text is not None and json.loads(response.text) == {"error": "full"}


def test_rate_limit_allows_a_burst_then_the_sustained_rate() -> None:
    limit = RateLimit(rate=10.0, burst=5)
    assert [limit.allow(0.0) for _ in range(6)] == [True] * 5 + [False]
    assert limit.allow(0.05) is False  # half a token has come back
    assert limit.allow(0.1) is True
    assert sum(limit.allow(10.0) for _ in range(20)) == 5  # refilled to the burst, no more


def test_rate_limit_needs_a_positive_rate() -> None:
    with pytest.raises(ValueError):
        RateLimit(rate=0.0, burst=5)


async def test_a_refused_request_closes_its_connection_and_an_answered_one_keeps_it() -> None:
    """A refused client holds no socket (and no handler task) on a keep-alive connection."""
    from aiohttp import web
    from aiohttp.test_utils import TestClient, TestServer

    from app.security.limits import refusals

    async def handler(request: web.Request) -> web.Response:
        if request.query.get("refuse"):
            raise Refused(400, "no")
        return web.Response(text="yes")

    app = web.Application(middlewares=[refusals()])
    app.router.add_get("/", handler)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        answered = await client.get("/")
        refused = await client.get("/?refuse=1")
        assert (answered.status, refused.status) == (200, 400)
        assert answered.headers.get("Connection", "keep-alive").lower() == "keep-alive"
        assert refused.headers["Connection"].lower() == "close"
        assert (await refused.json())["error"] == "no"
