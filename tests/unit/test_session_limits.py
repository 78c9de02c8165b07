"""A session's data channel never lets a message kill it, and never grows without bound:
depth and size limits, a rate limit, and an error event instead of an exception."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from aiortc import RTCPeerConnection

from app.transports.webrtc.session import MESSAGE_BURST, Session


@pytest.fixture
async def session() -> AsyncIterator[Session]:
    pc = RTCPeerConnection()
    made = Session(pc, SimpleNamespace(), idle_timeout=5.0,  # type: ignore[arg-type]
                   on_turn=lambda _s, _t: None, on_closed=lambda _s: None)
    yield made
    await pc.close()


def _sent(session: Session) -> list[dict[str, Any]]:
    return [json.loads(message) for message in session._pending]


@pytest.mark.parametrize(
    "message",
    ["[" * 1500 + "]" * 1500, '{"type": ' * 1000, "x" * 5000, b"binary", '"just a string"',
     '{"type": ["ping"]}', "\ud800"],
    ids=["nested-3KB", "nested-open", "too-large", "binary", "not-object", "type-not-str",
         "lone-surrogate"],
)
async def test_a_hostile_message_gets_an_error_event(session: Session, message: object) -> None:
    session._on_message(message)
    assert [event["type"] for event in _sent(session)] == ["error"]


async def test_a_failing_handler_becomes_an_error_event_not_an_exception(
        session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_server_t: object) -> None:
        raise RecursionError("deep")

    monkeypatch.setattr(session, "_on_audio_onset", broken)
    session._on_message(json.dumps({"type": "audio_onset", "server_t": 1.0}))
    assert _sent(session) == [{"type": "error",
                               "message": "the server could not handle that message"}]


async def test_a_flood_is_cut_to_the_burst_with_one_complaint(session: Session) -> None:
    for i in range(MESSAGE_BURST * 3):
        session._on_message(json.dumps({"type": "ping", "t": i}))
    kinds = [event["type"] for event in _sent(session)]
    assert kinds.count("pong") == MESSAGE_BURST
    assert kinds.count("error") == 1


async def test_a_ping_echoes_only_a_number(session: Session) -> None:
    session._on_message(json.dumps({"type": "ping", "t": {"a": 1}}))
    session._on_message(json.dumps({"type": "ping", "t": 12.5}))
    assert [event["t"] for event in _sent(session)] == [None, 12.5]


async def test_closing_ends_a_task_that_lost_its_first_cancellation(session: Session) -> None:
    """Python 3.11's asyncio.wait_for can swallow a cancellation that comes as its future
    completes; the session's close sends it again rather than waiting for ever."""
    import asyncio

    cancels = 0

    async def stubborn() -> None:
        nonlocal cancels
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancels += 1
                if cancels > 1:
                    raise

    session.task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    await asyncio.wait_for(session.close("test"), 5)
    assert session.task is None or session.task.done()
    assert cancels == 2
