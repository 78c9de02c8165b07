"""A conversation that cannot get stuck: what the LLM reads, what it may say, how long.

Measured (with plain llama-cpp-python; the quality bench, docs/quality.md): under
greedy decoding SmolLM2-135M answers every new question with an earlier assistant turn once
the history holds two or three copies of it, and an interrupted (cut) reply in the history
makes the copy complete. Three guards, each pure and testable without a model:

- `prompt_history`: the history the LLM reads — interrupted exchanges left out (the user
  did not let the reply finish; a cut sentence is the easiest thing to copy), bounded to
  the last few exchanges.
- `CopyGuard`: holds reply text back while it is still the start of an earlier reply, and
  calls a copy once it has followed one for long enough: the caller regenerates.
- `sentence_budget`, `word_budget`, `is_offer`: spoken answers are one sentence, or two
  short ones, unless the user asked for more, and end before an offer of more help, so
  ordinary use does not talk over the user's next question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.answer.llm import Message


@dataclass(frozen=True, kw_only=True)
class IntegrityOptions:
    max_exchanges: int = 4
    """Exchanges of history the LLM reads (the newest); a small model copies from more."""
    keep_interrupted: bool = False
    """Keep interrupted replies (what was heard) in the prompt. Off: the exchange is left
    out of the prompt (it stays in the conversation's history)."""
    copy_guard: bool = True
    copy_words: int = 6
    """A reply that follows an earlier one word for word this far (or to its end, if it is
    shorter) is a copy."""
    copy_min_words: int = 4
    """Earlier replies shorter than this are not guarded ("You're welcome." may recur)."""
    max_sentences: int = 2
    """Sentences in a spoken reply; the reply is cut at the end of the last one."""
    more_sentences: int = 4
    """... when the user asked for more (a story, an explanation, steps, a list)."""
    max_words: int = 45
    """A reply is cut at the first sentence end past this many words, whatever it was asked."""
    reply_words: int = 12
    """An ordinary LLM reply starts no further sentence once it has this many words
    (default 12; 0: only `max_words`; why: docs/quality.md)."""

    def __post_init__(self) -> None:
        if self.max_exchanges < 0 or self.max_sentences < 1 or self.more_sentences < 1:
            raise ValueError("max_exchanges must be >= 0 and the sentence budgets >= 1")
        if self.reply_words < 0 or self.max_words < 1:
            raise ValueError("reply_words must be >= 0 and max_words >= 1")


def prompt_history(history: Sequence[Message], options: IntegrityOptions) -> list[Message]:
    """What the LLM reads of `history`: the newest exchanges, at most `max_exchanges` and
    at least half as many (`window_start`); an exchange
    whose reply was interrupted is left out whole unless `keep_interrupted` (its question
    alone, a user turn with no answer, made Qwen2.5-0.5B answer the next question with
    "Egypt is the capital of Egypt.")."""
    kept: list[Message] = []
    for message in history:
        if message.interrupted and not options.keep_interrupted:
            if kept and kept[-1].role == "user":
                kept.pop()
            continue
        kept.append(message)
    if options.max_exchanges == 0:
        return []
    users = [i for i, m in enumerate(kept) if m.role == "user"]
    if len(users) > options.max_exchanges:
        kept = kept[users[window_start(len(users), options.max_exchanges)]:]
    return kept


def window_start(exchanges: int, most: int) -> int:
    """The first of `exchanges` the prompt keeps, at most `most` of them: the window moves
    in steps of half its size, so that its start — and with it the prompt's prefix the
    LLM has read — stays put for several turns. A window that slid by one exchange every
    turn changed the prompt right after the system prompt, and every turn re-read the
    whole history (seconds on a CPU; `apace bench --room`'s 19-question sessions)."""
    if exchanges <= most:
        return 0
    step = max(1, (most + 1) // 2)
    return -(-(exchanges - most) // step) * step


_WORD = re.compile(r"[a-z0-9']+")


def words(text: str) -> list[str]:
    """Lower-case words, punctuation dropped: how replies are compared."""
    return _WORD.findall(text.lower().replace("\u2019", "'"))


class CopyGuard:
    """Feed streamed reply text; it releases what is safe to speak.

    Text is held back while its words are the start of an earlier reply. When it departs
    from every earlier reply, everything held is released at once; when it has followed one
    for `copy_words` words (or all of it), `copied` is set and nothing more is released.
    Holding costs nothing in practice: a clause needs a few words anyway, and replies part
    from each other within their first words.
    """

    def __init__(self, earlier: Sequence[str], options: IntegrityOptions | None = None) -> None:
        self.options = options or IntegrityOptions()
        self._candidates = [w for w in map(words, earlier) if len(w) >= self.options.copy_min_words]
        self._text = ""
        self._released = 0
        self.copied: str | None = None
        """The earlier reply this one copies (None: no copy)."""

    def feed(self, piece: str) -> str:
        """Add streamed text; returns the text that may be spoken now ('' while held)."""
        if self.copied is not None:
            return ""
        self._text += piece
        if not self._candidates:
            return self._release()
        said = words(self._text)
        complete = said if self._text[-1:].isspace() or not self._text[-1:].isalnum() else said[:-1]
        self._candidates = [c for c in self._candidates if _starts(c, said, complete)]
        for candidate in self._candidates:
            if len(complete) >= min(self.options.copy_words, len(candidate)):
                self.copied = " ".join(candidate)
                return ""
        return self._release() if not self._candidates else ""

    def finish(self) -> str:
        """The reply ended: the rest may be spoken, unless it was a copy."""
        if self.copied is not None:
            return ""
        said = words(self._text)
        if any(said == c or (said and len(said) >= min(self.options.copy_words, len(c))
                             and c[: len(said)] == said) for c in self._candidates):
            self.copied = " ".join(said)
            return ""
        return self._release()

    def _release(self) -> str:
        out, self._released = self._text[self._released:], len(self._text)
        return out


def _starts(candidate: list[str], said: list[str], complete: list[str]) -> bool:
    """`candidate` begins with the complete words said so far, and its next word begins
    with the word still being written."""
    if candidate[: len(complete)] != complete:
        return False
    if len(said) > len(complete):
        partial = said[-1]
        nxt = candidate[len(complete)] if len(candidate) > len(complete) else ""
        return nxt.startswith(partial)
    return True


_ASKS_FOR_MORE = re.compile(
    r"\b(tell me (a|an|about|more)|story|joke|riddle|poem|explain|in detail|describe|steps|"
    r"step by step|"
    r"list|recipe|how (do|can|should) i)\b", re.IGNORECASE)


def sentence_budget(transcript: str, options: IntegrityOptions) -> int:
    """How many sentences the reply to `transcript` may have."""
    return options.more_sentences if _ASKS_FOR_MORE.search(transcript) else options.max_sentences


def word_budget(transcript: str, options: IntegrityOptions) -> int:
    """Words after which an LLM reply to `transcript` starts no further sentence."""
    if _ASKS_FOR_MORE.search(transcript) or not options.reply_words:
        return options.max_words
    return min(options.reply_words, options.max_words)


_OFFER = re.compile(
    r"^(?:(?:so|and|now),?\s+)?(?:(?:what|how)(?: else)? (?:can|may) i (?:do|help|assist)"
    r"|(?:is there )?anything else|if you (?:have|need|want)|let me know|feel free|"
    r"(?:i'?m |i am )?(?:here|happy|glad) to help|do you (?:have|need|want) (?:any|more|anything)"
    r"|(?:hope|i hope) (?:this|that) helps)\b", re.IGNORECASE)


def is_offer(sentence_start: str) -> bool:
    """Whether a sentence after the answer is only an offer of more help ("What can I do
    for you?", "If you have any more questions, feel free to ask."): the 0.5B tacks one
    onto a third of its answers; a spoken reply ends before it."""
    return bool(_OFFER.match(sentence_start.strip()))


def earlier_replies(history: Sequence[Message], transcript: str) -> list[str]:
    """The assistant's earlier replies a new reply must not copy — except replies to the
    very same question (asked again, the same answer is right)."""
    asked = words(transcript)
    out: list[str] = []
    question: list[str] | None = None
    for message in history:
        if message.role == "user":
            question = words(message.content)
        elif message.role == "assistant" and message.content and question != asked:
            out.append(message.content)
    return out
