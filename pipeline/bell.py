"""Timers that really ring: a conversation's bell rings each timer when it is due.

The chime goes out at once, ahead of any reply audio that is playing (the reply resumes
after it), then the spoken line ("Your pasta timer is done."). Nothing here listens to the
microphone: a ringing timer is output, never a turn, never a barge-in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from pipeline.chime import chime
from pipeline.conversation_events import Emit, TimerFired, TimerInfo, TimerList
from pipeline.events import Pcm
from pipeline.skills.timer_store import Timer, Timers
from pipeline.skills.timers import ring_text
from pipeline.speaker import Speaker
from pipeline.timeline import now

log = logging.getLogger(__name__)

Say = Callable[[str], Awaitable[Pcm]]


class Bell:
    def __init__(self, timers: Timers, speaker: Speaker, say: Say, emit: Emit) -> None:
        self.timers = timers
        self.speaker = speaker
        self.say = say
        self.emit = emit
        self.late_ms: list[float] = []
        """How late each ring's chime was queued, after its due time."""
        self._changed = asyncio.Event()

    def changed(self) -> None:
        """Timers were set or cancelled: tell the page, and wake the bell."""
        self.emit(self.snapshot())
        self._changed.set()

    def snapshot(self) -> TimerList:
        t = now()
        return TimerList(tuple(
            TimerInfo(timer.id, timer.kind, timer.name, timer.label,
                      due_in_s=round(Timers.remaining(timer, t), 1), paused=timer.paused)
            for timer in sorted(self.timers.active(), key=lambda timer: timer.due)))

    async def run(self) -> None:
        """Ring timers as they fall due, until cancelled (cancel-safe)."""
        while True:
            self._changed.clear()
            due = self.timers.next_due()
            if due is None or due > now():
                timeout = None if due is None else due - now()
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a
                # cancellation that comes as the event is set.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await self._changed.wait()
                continue
            for timer in self.timers.pop_due(now()):
                await self._ring(timer)
            self.emit(self.snapshot())

    async def _ring(self, timer: Timer) -> None:
        self.speaker.interject(chime())
        self.late_ms.append((now() - timer.due) * 1000)
        text = ring_text(timer)
        self.emit(TimerFired(timer.id, timer.kind, timer.name, timer.label, text,
                             late_ms=round(self.late_ms[-1], 1)))
        try:
            self.speaker.interject(await self.say(text))
        except Exception:  # the chime rang; a failed voice line must not stop the bell
            log.exception("could not say %r", text)
