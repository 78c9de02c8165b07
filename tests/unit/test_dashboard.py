"""The dashboard hub: publishing never waits, and a client that stops reading is dropped
with a bounded outbox instead of growing the server's memory."""

from __future__ import annotations

import asyncio
import inspect
import json

from aiohttp import WSCloseCode

from app.observe.dashboard import Hub, Outbox


def test_outbox_holds_at_most_its_limit_and_drops_the_client_on_overflow() -> None:
    outbox = Outbox(limit=3)
    assert all(outbox.put(f"m{i}") for i in range(3))
    assert not outbox.put("m3")
    assert outbox.dropped is not None and "too slow" in outbox.dropped
    assert outbox.close_code == WSCloseCode.TRY_AGAIN_LATER
    assert len(outbox.messages) == 0, "a dropped client's messages are freed"
    assert not outbox.put("m4")
    assert outbox.peak == 3


def test_publish_is_plain_synchronous_code() -> None:
    """It runs inside a conversation's callbacks: it must not be able to wait on a client."""
    assert not inspect.iscoroutinefunction(Hub.publish)
    assert not inspect.iscoroutinefunction(Outbox.put)


def test_publish_drops_a_stalled_client_and_keeps_serving_the_others() -> None:
    hub = Hub(limit=4)
    stalled, reading = hub.join(), hub.join()
    for i in range(1000):
        hub.publish({"type": "turn", "turn": i})
        reading.messages.clear()  # this one keeps up
        assert len(stalled.messages) <= 4
    assert stalled.dropped is not None
    assert hub.clients == {reading}
    assert hub.dropped == 1
    assert reading.dropped is None


def test_publish_serializes_each_event_once_for_all_clients() -> None:
    hub = Hub()
    first, second = hub.join(), hub.join()
    hub.publish({"type": "stats", "sessions": 2})
    assert first.messages[0] is second.messages[0]
    assert json.loads(first.messages[0]) == {"type": "stats", "sessions": 2}


async def test_a_sender_that_never_drains_is_cancelled_when_its_client_is_dropped() -> None:
    """The sender may be stuck writing to a socket whose peer stopped reading."""
    hub = Hub(limit=2)
    outbox = hub.join()
    stuck = asyncio.Event()

    async def send_forever() -> None:
        await outbox.get()
        await stuck.wait()  # like ws.send_str() on a full socket

    outbox.sender = asyncio.create_task(send_forever())
    for i in range(10):
        hub.publish({"type": "turn", "turn": i})
        await asyncio.sleep(0)
    await asyncio.wait([outbox.sender], timeout=1)
    assert outbox.sender.cancelled()
    assert outbox not in hub.clients


async def test_outbox_delivers_in_order_to_a_waiting_sender() -> None:
    outbox = Outbox()
    received: list[str] = []

    async def sender() -> None:
        while len(received) < 3:
            received.append(await outbox.get())

    task = asyncio.create_task(sender())
    await asyncio.sleep(0)
    for message in ("a", "b", "c"):
        outbox.put(message)
    await asyncio.wait_for(task, 1)
    assert received == ["a", "b", "c"]


def test_close_all_drops_every_client_as_going_away() -> None:
    hub = Hub()
    clients = [hub.join() for _ in range(3)]
    hub.close_all("server shutting down")
    assert hub.clients == set()
    assert {c.close_code for c in clients} == {WSCloseCode.GOING_AWAY}
    assert {c.dropped for c in clients} == {"server shutting down"}
