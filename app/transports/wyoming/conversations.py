"""Wyoming's `handle`: a Conversation per conversation id, answering text with text.

Home Assistant opens a connection per request, so conversations outlive connections: they
are kept here by id, each with its own llama context (its history is that context's KV
prefix), until idle for `idle_s` or pushed out by a newer one beyond `max_open`. A turn
runs the Conversation's own reply path — skills first, then the LLM, the integrity rules,
the history — with no TTS (Home Assistant speaks the reply through its TTS step).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from pipeline.conversation import Conversation
from pipeline.conversation_events import ConversationEvent, Error, ReplyDelta, Turn
from pipeline.conversation_options import TransportNeeds
from pipeline.engine import Engine
from pipeline.events import AudioFrame
from pipeline.speaker import Speaker
from pipeline.timeline import now

log = logging.getLogger(__name__)

OnDelta = Callable[[str], None]


class HandleError(Exception):
    """A turn that could not be answered; the message is for the client."""


@dataclass
class _Turn:
    on_delta: OnDelta
    done: asyncio.Future[str]


@dataclass
class _Open:
    """One conversation, run by its own task from open to close."""

    id: str
    ready: asyncio.Future[Conversation]
    """Resolves to the conversation once its llama context is open."""
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    used: float = field(default_factory=now)
    task: asyncio.Task[None] | None = None
    turn: _Turn | None = None

    def emit(self, event: ConversationEvent) -> None:
        turn = self.turn
        if turn is None or turn.done.done():
            return
        match event:
            case ReplyDelta(text=text):
                turn.on_delta(text)
            case Turn(reply=reply):
                turn.done.set_result(reply)
            case Error(message=message):
                turn.done.set_exception(HandleError(message or "the reply failed"))


class Conversations:
    """Open conversations by id (least recently used first)."""

    def __init__(self, engine: Engine, *, max_open: int = 4, idle_s: float = 600.0,
                 turn_timeout_s: float = 60.0) -> None:
        self.engine = engine
        self.max_open = max_open
        self.idle_s = idle_s
        self.turn_timeout_s = turn_timeout_s
        self._open: OrderedDict[str, _Open] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    async def ask(self, conversation_id: str, text: str, on_delta: OnDelta) -> str:
        """The reply to `text` in conversation `conversation_id`; `on_delta` gets its text
        as it streams. Raises HandleError. Cancel-safe: the reply is cancelled."""
        held = await self._get(conversation_id)
        async with held.lock:
            conversation = held.ready.result()
            done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            held.turn = _Turn(on_delta, done)
            try:
                if not conversation.start_turn(text=text):
                    raise HandleError("the conversation is not ready for a new turn")
                async with asyncio.timeout(self.turn_timeout_s):
                    return await done
            except TimeoutError:
                raise HandleError(f"no reply within {self.turn_timeout_s:g} s") from None
            finally:
                held.turn = None
                held.used = now()

    async def _get(self, conversation_id: str) -> _Open:
        self._expire()
        held = self._open.get(conversation_id)
        if held is not None and held.task is not None and not held.task.done():
            self._open.move_to_end(conversation_id)
            await asyncio.shield(held.ready)  # (another request may be opening it)
            return held
        while len(self._open) >= self.max_open:
            _, oldest = self._open.popitem(last=False)
            await self._close(oldest)
        held = _Open(conversation_id, ready=asyncio.get_running_loop().create_future())
        held.task = asyncio.create_task(self._run(held, held.ready),
                                        name=f"wyoming-conv-{conversation_id}")
        self._open[conversation_id] = held
        try:
            await asyncio.shield(held.ready)
        except BaseException:
            self._open.pop(conversation_id, None)
            await self._close(held)
            raise
        return held

    async def _run(self, held: _Open, ready: asyncio.Future[Conversation]) -> None:
        """Owns the conversation from open to close (the engine's context manager lives in
        this one task)."""
        try:
            # Text only (Home Assistant speaks the reply), and it cannot ring: the owner's
            # timers stay with a way in that can.
            async with self.engine.open(Speaker(), emit=held.emit, keep_timers=False,
                                        needs=TransportNeeds(spoken=False, rings=False)) as conversation:
                ready.set_result(conversation)
                await conversation.run(_until(held.stop))
        except Exception as error:
            log.exception("wyoming conversation %s failed", held.id)
            if not ready.done():
                ready.set_exception(HandleError(f"cannot open a conversation: {error}"))
        finally:
            if not ready.done():
                ready.cancel()
            if held.turn is not None and not held.turn.done.done():
                held.turn.done.set_exception(HandleError("the conversation was closed"))

    def _expire(self) -> None:
        """Close conversations idle longer than `idle_s` (their tasks end on their own)."""
        cutoff = now() - self.idle_s
        for key in [k for k, held in self._open.items()
                    if held.used < cutoff and not held.lock.locked()]:
            self._open.pop(key).stop.set()

    async def _close(self, held: _Open) -> None:
        held.stop.set()
        if held.task is not None:
            await asyncio.wait([held.task])

    async def close_all(self) -> None:
        """Close every conversation and wait for each to end. Cancel-safe."""
        opened = list(self._open.values())
        self._open.clear()
        for held in opened:
            held.stop.set()
        tasks = [held.task for held in opened if held.task is not None]
        if tasks:
            await asyncio.wait(tasks)


async def _until(stop: asyncio.Event) -> AsyncIterator[AudioFrame]:
    """No audio at all, until `stop`: the conversation lives on text turns."""
    await stop.wait()
    nothing: tuple[AudioFrame, ...] = ()
    for frame in nothing:  # (an async generator that yields nothing)
        yield frame
