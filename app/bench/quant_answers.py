"""The greedy answers of one GGUF to the bench's LLM questions, routed as the server does.

Each tuned conversation (app/bench/conversations.toml: never the held-out or blind files)
is walked turn by turn with its own skills (timers, a scratch list store, the stateless
skills of app.runtime) and history: a turn a skill answers is the skill's reply, the others
the LLM's, written by the product's responder (models.load.open_responder: its prompt,
chat template and tools, greedy) with the history the product gives it
(pipeline.answer.integrity.prompt_history). A tool call is handed to the skills as the
server does (pipeline.answer.tools.request_for), or answered again in words. What this walk
leaves out: the copy guard's regeneration and the clause splitter's cut (the reply is cut at
its sentence budget here instead), speculation and drafts (they never change a greedy reply).
"""

from __future__ import annotations

import datetime
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from app.bench.conversations import CONVERSATIONS, ConversationSpec, conversation_set
from pipeline.answer.integrity import IntegrityOptions, prompt_history, sentence_budget
from pipeline.answer.llm import LlmOptions, Message
from pipeline.answer.reply import NOT_CAUGHT
from pipeline.answer.tools import may_be_call, may_call, request_for, without_markers
from pipeline.quality import Rule, score_turn
from pipeline.skills.base import LastResult, SkillContext, SkillReply
from pipeline.skills.router import Skills

QUESTIONS = Path(__file__).with_name("questions.txt")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


@dataclass(frozen=True, kw_only=True)
class Answer:
    """One question's answer by one model."""

    where: str
    """"questions:N" or "CONVERSATION:TURN"."""
    question: str
    llm_text: str
    """What the LLM wrote (the first pass; a call as written)."""
    reply: str
    """What would be said: the LLM's words cut at the sentence budget, or a called skill's."""
    right: bool | None
    """The bench's scorer (pipeline.quality.score_turn); None: the question has no rule."""


def cut(text: str, most: int) -> str:
    """The first `most` sentences of `text` (sentences end in . ! or ? and a space)."""
    pieces = _SENTENCE_END.split(text.strip())
    return " ".join(p.strip() for p in pieces[:most] if p.strip())


def tuned_conversations() -> list[ConversationSpec]:
    """The tuned set only: the held-out and blind files are not read."""
    return conversation_set(files=((CONVERSATIONS, "tuned"),), today=datetime.date.today())


def questions() -> list[str]:
    return [line.strip() for line in QUESTIONS.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


class Walk:
    """One model's replies, with the product's responder and a fresh set of skills per
    conversation."""

    def __init__(self, path: Path, options: LlmOptions, scratch: Path) -> None:
        from app.runtime import stateless_skills
        from models.intents import load_recognizer
        from models.load import open_responder

        self.responder = open_responder(path, replace(options, drafts=False))
        self.extra, _ = stateless_skills(str(scratch / "unused"))
        self.recognizer = load_recognizer()
        self.scratch = scratch
        self.integrity = IntegrityOptions()

    def close(self) -> None:
        self.responder.close()

    def questions(self, asked: Sequence[str]) -> list[Answer]:
        """Each line of questions.txt in a new conversation, those a skill answers left out."""
        found = []
        for n, question in enumerate(asked, 1):
            spec = ConversationSpec(name=f"questions:{n}", turns=())
            found += self._conversation(spec, [(question, Rule())], label=f"questions:{n}")
        return found

    def conversation(self, spec: ConversationSpec) -> list[Answer]:
        return self._conversation(spec, [(t.say, t.rule) for t in spec.turns])

    def _conversation(self, spec: ConversationSpec, turns: Sequence[tuple[str, Rule]],
                      label: str | None = None) -> list[Answer]:
        from models.list_store import SqliteListStore
        from pipeline.skills import Timers, default_skills

        with tempfile.TemporaryDirectory(dir=self.scratch) as tmp:
            skills = default_skills(timers=Timers(), store=SqliteListStore(Path(tmp) / "l.db"),
                                    extra=self.extra, recognizer=self.recognizer)
            history: list[Message] = []
            last: LastResult | None = None
            answers: list[Answer] = []
            earlier: list[str] = []
            for i, (say, rule) in enumerate(turns, 1):
                previous = next((m.content for m in reversed(history)
                                 if m.role == "assistant" and m.content), "")
                ctx = SkillContext(now=datetime.datetime.now().astimezone(), monotonic=0.0,
                                   transcript=say, previous=previous, last=last)
                skill = skills.answer(say, ctx)
                llm_text = ""
                if skill is None:
                    llm_text, text, skill = self._llm(history, say, skills, ctx)
                else:
                    text = skill.text
                if skill is None or llm_text:
                    score = score_turn(rule, text, say, earlier)
                    answers.append(Answer(where=label or f"{spec.name}:{i}", question=say,
                                          llm_text=llm_text, reply=text,
                                          right=score.right))
                earlier.append(text)
                left_out = not text or (skill is not None and skill.refusal) or text == NOT_CAUGHT
                history += [Message("user", say), Message("assistant", text, left_out)]
                if text and text != NOT_CAUGHT:
                    last = skill.result if skill is not None else \
                        LastResult(skill="llm", kind="topic", topic=say)
        return answers

    def _llm(self, history: list[Message], say: str, skills: Skills,
             ctx: SkillContext) -> tuple[str, str, SkillReply | None]:
        """(what the LLM wrote, what is said, the skill a call reached)."""
        responder = self.responder
        budget = sentence_budget(say, self.integrity)
        kept = prompt_history(history, self.integrity)
        plain = responder.tools and not may_call(say)
        written = "".join(responder.reply(kept, say, plain=plain))
        if not (responder.tools and may_be_call(written)):
            return written, cut(without_markers(written), budget), None
        if plain:
            return written, NOT_CAUGHT, None
        request = request_for(written, say)
        skill = skills.answer(request, replace(ctx, transcript=request)) \
            if request is not None else None
        if skill is not None:
            return written, skill.text, skill
        again = "".join(responder.reply(kept, say, plain=True))
        return written, cut(without_markers(again), budget), None


def all_answers(path: Path, options: LlmOptions, scratch: Path) -> list[Answer]:
    """Every LLM answer of the model at `path`: questions.txt, then the tuned conversations."""
    walk = Walk(path, options, scratch)
    try:
        found = walk.questions(questions())
        for spec in tuned_conversations():
            found += walk.conversation(spec)
        return found
    finally:
        walk.close()
