"""What a finished reply leaves behind: the Turn reported, the two messages the history
keeps, and the referent a follow-up reads. Pure: pipeline.conversation applies it."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.answer.llm import Message
from pipeline.answer.reply import NOT_CAUGHT, Reply
from pipeline.conversation_events import Turn
from pipeline.quality import turn_flags
from pipeline.skills import LastResult


@dataclass(frozen=True)
class Record:
    turn: Turn
    messages: tuple[Message, Message]
    """The user's words and what they heard of the reply (marked when left out)."""
    left_out: bool
    """Kept out of the LLM's prompt (cut, silent, not understood, or a refusal)."""
    result: LastResult | None
    referent_changed: bool
    """False: the reply said nothing or "didn't catch that": the last referent stands."""


def record(reply: Reply, history: list[Message], index: int, *, interrupted: bool) -> Record:
    """The record of `reply`, the `index`-th turn, after `history`."""
    heard = reply.played_text if interrupted else reply.text.strip()
    earlier = [m.content for m in history if m.role == "assistant"]
    quality = turn_flags(reply.text, reply.transcript or "", earlier, audio_s=reply.audio_s)
    # Nothing said ("stop": pipeline.skills.hush), nothing understood (the 0.5B put
    # the "M-m-m-champ." it could not answer into its next story), or an honest
    # refusal (after one "I can't get the news: I work offline…", Qwen2.5-0.5B answered
    # the next five questions "I can't get the …: I work offline") is left out of the
    # prompt, as a cut reply is.
    refused = reply.skill is not None and reply.skill.refusal
    not_caught = reply.text.strip() == NOT_CAUGHT
    left_out = interrupted or not heard or refused or not_caught
    turn = Turn(index, reply.transcript or "", reply.text.strip(), heard,
                interrupted, reply.timeline, reply.done_logprob,
                skill=reply.skill.skill if reply.skill is not None else None,
                source=reply.skill.source if reply.skill is not None else None,
                copies=reply.copies, quality=quality,
                degraded=tuple(sorted(map(str, reply.under_load.tags))) if reply.under_load else (),
                first_heard=reply.first_heard)
    messages = (Message("user", reply.transcript or ""),
                Message("assistant", heard, interrupted=left_out))
    changed = bool(heard) and not not_caught
    return Record(turn, messages, left_out, _result_of(reply) if changed else None, changed)


def _result_of(reply: Reply) -> LastResult | None:
    """What a finished turn leaves for a follow-up: its skill's result, or the LLM's topic."""
    if reply.skill is not None:
        return reply.skill.result
    return LastResult(skill="llm", kind="topic", topic=reply.transcript or "")


def last_reply(history: list[Message]) -> str:
    """The last thing the assistant said (a skill's "say that again"; "" before any)."""
    return next((m.content for m in reversed(history) if m.role == "assistant" and m.content), "")
