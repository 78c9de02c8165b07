"""One committed turn through the real Reply with a real LLM, as a conversation runs it."""

from __future__ import annotations

import asyncio
from datetime import datetime

import numpy as np

from models.intents import load_recognizer
from models.llama_responder import LlamaResponder
from pipeline.answer.reply import Reply
from pipeline.skills import SkillContext, SkillReply, Timers, default_skills
from pipeline.speaker import Speaker
from pipeline.timeline import SPEECH_END, Timeline, now
from tests.fakes import FakeSynthesizer, FakeTranscriber, Workers, play_out


async def ask(workers: Workers, responder: LlamaResponder, question: str,
              timers: Timers | None = None) -> Reply:
    """`question` answered with the skills a conversation has (its `timers`, default none),
    played out to the end."""
    skills = default_skills(timers=timers or Timers(), store=None, recognizer=load_recognizer())

    def answer_skill(transcript: str) -> SkillReply | None:
        ctx = SkillContext(now=datetime.now().astimezone(), monotonic=now(), transcript=transcript)
        return skills.answer(transcript, ctx)

    models = workers.models(FakeTranscriber(question), responder, FakeSynthesizer())  # type: ignore[arg-type]
    timeline = Timeline()
    timeline.stamp(SPEECH_END, now())
    speaker = Speaker()
    reply = Reply(models, speaker, [], np.zeros(16_000, np.int16), timeline, lambda _e: None,
                  speculative=False, answer_skill=answer_skill)
    reply.commit()
    await play_out(speaker, asyncio.create_task(reply.run()))
    return reply
