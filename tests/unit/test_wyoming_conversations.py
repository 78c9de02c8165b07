"""Wyoming's conversations by id: kept across requests, bounded (least recently used out),
closed cleanly; a failed reply is a HandleError, not a hang."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from app.transports.wyoming.conversations import Conversations, HandleError
from tests.transports import fake_engine

pytestmark = pytest.mark.timeout(10)


async def test_history_is_kept_per_id_and_the_oldest_is_closed_beyond_the_limit() -> None:
    fake = fake_engine(reply=["Sure."])
    conversations = Conversations(fake.engine, max_open=2)
    try:
        deltas: list[str] = []
        assert await conversations.ask("a", "one", deltas.append) == "Sure."
        assert deltas == ["Sure."]
        await conversations.ask("b", "two", deltas.append)
        await conversations.ask("a", "three", deltas.append)  # a is now the newest
        await conversations.ask("c", "four", deltas.append)   # b goes
        assert len(conversations) == 2
        await conversations.ask("b", "five", deltas.append)   # b again: a new, empty one
        histories = fake.responder.histories
        assert [m.content for m in histories[2]] == ["one", "Sure."]
        assert histories[4] == []
    finally:
        await conversations.close_all()
        fake.close()
    assert len(conversations) == 0


async def test_concurrent_turns_on_one_id_take_turns() -> None:
    fake = fake_engine(reply=["Ok."], llm_delay_s=0.02)
    conversations = Conversations(fake.engine)
    try:
        replies = await asyncio.gather(*(conversations.ask("a", f"q{i}", lambda _t: None)
                                         for i in range(3)))
        assert replies == ["Ok."] * 3
        assert fake.responder.users == ["q0", "q1", "q2"]
    finally:
        await conversations.close_all()
        fake.close()


async def test_a_failing_reply_is_a_handle_error() -> None:
    fake = fake_engine()

    def broken(*_args: object, **_kwargs: object) -> Iterator[str]:
        raise RuntimeError("llama exploded")
        yield ""

    fake.responder.reply = broken  # type: ignore[method-assign]
    conversations = Conversations(fake.engine, turn_timeout_s=5)
    try:
        with pytest.raises(HandleError, match="reply failed"):
            await conversations.ask("a", "hello", lambda _t: None)
    finally:
        await conversations.close_all()
        fake.close()
