"""`apace talk`: spoken questions from WAV files through the real pipeline, offline.

The files are played into a conversation as a microphone would deliver them — 20 ms frames
at real-time pace (or as fast as possible with `fast`) — and the reply audio is taken out
of the speaker at the same pace a WebRTC track would take it, so the timeline is the one
a user would see.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app.transports.pacing import FrameClock
from models.wav_files import AudioError, read_wav
from pipeline.audio import frames
from pipeline.conversation import Conversation
from pipeline.conversation_events import Turn, to_wire
from pipeline.engine import Engine
from pipeline.events import FRAME_MS, FRAME_SAMPLES, AudioFrame, Pcm
from pipeline.listen.vad import webrtc_classifier
from pipeline.room import Stream
from pipeline.speaker import Speaker
from pipeline.timeline import now

TAIL_LIMIT_S = 60.0
"""Longest wait for a reply to finish after the input ends."""


@dataclass
class TalkResult:
    turns: list[Turn]
    reply_audio: Pcm
    speculation: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """What `apace talk --json` prints: each turn as the page gets it, and the whole."""
        turns = [to_wire(t) for t in self.turns]
        first = turns[0] if turns else {"transcript": "", "reply": "", "timeline_ms": {}}
        return {
            "transcript": " ".join(t.transcript for t in self.turns),
            "reply": " ".join(t.reply for t in self.turns),
            "timeline_ms": first["timeline_ms"],
            "turns": turns,
            "speculation": self.speculation,
        }


def load_questions(paths: Sequence[str | Path]) -> list[Pcm]:
    """Each file as 16 kHz mono audio; a file with no speech in it is an AudioError."""
    classify = webrtc_classifier(2)
    out = []
    for path in paths:
        pcm = read_wav(path)
        voiced = sum(classify(frame) for frame in frames(pcm))
        if voiced * FRAME_MS < 200:
            raise AudioError(f"{path}: no speech found (the file is silent or too quiet)")
        out.append(pcm)
    return out


async def talk(engine: Engine, questions: Sequence[Pcm], *, fast: bool = False) -> TalkResult:
    """Play the questions into one conversation; wait for each reply before the next."""
    speaker = Speaker()
    collected: list[Pcm] = []
    # A file's question may begin at once: no room to hear before it. Nothing played
    # comes back (a file in, a file out), however fast the replies are drained.
    stream = Stream(speech_at_once=True, hears_us=False)
    async with engine.open(speaker, stream=stream) as conversation:
        clock = _Clock(fast)
        feed = _feed(conversation, speaker, questions, clock, collected)
        await conversation.run(feed)
    audio = np.concatenate(collected) if collected else np.zeros(0, np.int16)
    return TalkResult(conversation.turns, audio, vars(conversation.speculation).copy())


class _Clock:
    """Real-time pacing (app.transports.pacing's schedule), or none at all with `fast`."""

    def __init__(self, fast: bool) -> None:
        self.fast = fast
        self._ticks = 0
        self._real_time = FrameClock()

    async def tick(self) -> None:
        self._ticks += 1
        if self.fast:
            await asyncio.sleep(0 if self._ticks % 50 else 0.001)
        else:
            await self._real_time.tick()


async def _feed(
    conversation: Conversation,
    speaker: Speaker,
    questions: Sequence[Pcm],
    clock: _Clock,
    collected: list[Pcm],
) -> AsyncIterator[AudioFrame]:
    """Mic frames for every question, then silence until the reply has played out."""
    silence = np.zeros(FRAME_SAMPLES, np.int16)

    def step() -> None:  # one 20 ms tick of the duplex "sound card"
        if (frame := speaker.pop()) is not None:
            collected.append(frame)

    for question in questions:
        for pcm in frames(question):
            await clock.tick()
            step()
            yield AudioFrame(pcm, now())
        deadline = now() + TAIL_LIMIT_S
        while now() < deadline and (conversation.user_speaking or conversation.busy):
            if clock.fast and not conversation.user_speaking:
                await asyncio.sleep(0.002)
                while (frame := speaker.pop()) is not None:
                    collected.append(frame)
                continue
            await clock.tick()
            step()
            yield AudioFrame(silence, now())
