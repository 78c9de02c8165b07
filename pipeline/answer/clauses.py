"""Clause splitter: the first speakable clause as early as possible, then sentences.

Piper's first audio chunk costs time in proportion to the text it is given, so the first
clause of a reply is cut at the first comma-like break once it has a few words; after that
the text is cut at sentence ends (longer units sound more natural), with a length cap.
Pure, synchronous, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pipeline.events import Clause

_SENTENCE_END = re.compile(r"[.!?…]+[\"')\]]*(?=\s|$)")
_CLAUSE_BREAK = re.compile(r"[,;:—–]+(?=\s|$)|\s-\s")
_WORD_BEFORE = re.compile(r"(?:^|\s)([A-Za-z]{2,})$")
"""A plain word of letters right before a mark at the end of the text so far: the mark
ends it for sure (not a decimal "3.", an initial "J.", a dotted "U.S." or "there.com" — a
URL is the one accepted miss), so the clause need not wait for the next token."""
# Abbreviations whose period does not end a sentence.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e approx no fig inc ltd co".split()
)
_LINKING_WORDS = frozenset(
    "and but or so because that which who whom whose when where while with for to from "
    "in on at of by about as than is are was were can will".split()
)
_LEADING_WORDS = _LINKING_WORDS | frozenset(
    "a an the my your his her its our their this these those some any no not very more most "
    "less about around approximately over under nearly almost just only really so too quite"
    .split())
"""Words a clause cut by the cap may not end on: they lead into the next word."""
_NUMBER = re.compile(r"[-+$€£]?\d[\d.,:/%]*")
_MARKUP = re.compile(r"[*_#`~]+")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")  # [text](url): the text is spoken, not the url
_CODE = re.compile(r"</?[A-Za-z_][^<>]*>|\\[A-Za-z]+|\\.|[{}\\]")
"""Tags and LaTeX (the 0.5B wrote '\\(\\frac\\textbf[quantity]} \\times' and '<tools>
<function name="set timer">' into replies): not words, never read out."""


@dataclass(frozen=True, kw_only=True)
class ClauseOptions:
    """How reply text is cut into clauses for TTS. Why the first clause is cut early:
    docs/latency.md."""

    first_clause_min_words: int = 3
    """The first clause is cut at a comma-like break once it has this many words."""
    early_first_clause: bool = True
    """Cut the first clause before its sentence ends (default True); False: it waits for a
    sentence end like the rest (the `--sentence-clauses` lever)."""
    first_clause_max_words: int = 4
    """With no comma by this many words, the first clause is cut before a linking word
    with `first_clause_min_words` words before it ("The closest planet | to the sun…"):
    each token costs ~43 ms on 2 cores (default 4; why: docs/latency.md)."""
    first_clause_cap_words: int = 0
    """With neither a comma nor a linking word to cut at, the first clause is cut before
    its word N+1 as it is written, not after a number or a leading word (default 0: off;
    why: docs/latency.md)."""
    max_words: int = 30
    """A sentence longer than this is cut at its next comma-like break anyway."""
    lockstep: bool = True
    """Till the first clause is written, the LLM takes its next step only once the reply
    has read its last token, so no step (~55 ms on 2 cores) is under way when clause 1's
    audio is asked for (default True; pipeline.compute.gate)."""


    def __post_init__(self) -> None:
        if self.first_clause_cap_words < 0 or self.first_clause_min_words < 1:
            raise ValueError("first_clause_cap_words must be >= 0 (0: off) and"
                             " first_clause_min_words >= 1")


class ClauseSplitter:
    """Feed reply text as it streams; take clauses as soon as they are complete."""

    def __init__(self, options: ClauseOptions | None = None) -> None:
        self.options = options or ClauseOptions()
        self._buffer = ""
        self._index = 0

    def feed(self, text: str) -> list[Clause]:
        """Add streamed text; returns the clauses it completed."""
        self._buffer += text
        out = []
        while (clause := self._take()) is not None:
            out.append(clause)
        return out

    def drop(self) -> str:
        """Forget the text not yet made into a clause (never spoken); returns it."""
        rest, self._buffer = self._buffer, ""
        return rest

    def flush(self) -> list[Clause]:
        """The reply is complete: whatever text remains is the last clause."""
        rest, self._buffer = self._buffer, ""
        return self._emit(rest, ends_sentence=True)

    def _take(self) -> Clause | None:
        cut = self._sentence_cut()
        ends_sentence = cut is not None
        early = self._index == 0 and self.options.early_first_clause
        if early or (cut is None and self._too_long()):
            clause = self._clause_cut()
            if clause is not None and (cut is None or clause < cut):
                cut, ends_sentence = clause, False
        if cut is None and early:
            cut = self._phrase_cut()
        if cut is None:
            return None
        head, self._buffer = self._buffer[:cut], self._buffer[cut:]
        emitted = self._emit(head, ends_sentence=ends_sentence)
        return emitted[0] if emitted else self._take()

    def _sentence_cut(self) -> int | None:
        for match in _SENTENCE_END.finditer(self._buffer):
            word = self._buffer[: match.start()].rsplit(maxsplit=1)[-1:] or [""]
            if word[0].lower().rstrip(".") in _ABBREVIATIONS or _is_number_dot(match, self._buffer):
                continue
            if self._at_end(match) and not self._plain_word_before(match):
                continue
            return match.end()
        return None

    def _clause_cut(self) -> int | None:
        minimum = self.options.first_clause_min_words if self._index == 0 else 3
        for match in _CLAUSE_BREAK.finditer(self._buffer):
            if self._at_end(match) and not self._plain_word_before(match):
                continue
            if len(self._buffer[: match.start()].split()) >= minimum:
                return match.end()
        return None

    def _at_end(self, match: re.Match[str]) -> bool:
        return match.end() == len(self._buffer)

    def _plain_word_before(self, match: re.Match[str]) -> bool:
        """The mark ends the text so far: it counts only after a plain word (_WORD_BEFORE)
        that is not an abbreviation; otherwise the next token decides (one token later)."""
        found = _WORD_BEFORE.search(self._buffer, 0, match.start())
        return found is not None and found.group(1).lower() not in _ABBREVIATIONS

    def _phrase_cut(self) -> int | None:
        """Before a linking word, once the clause is long enough. The word being written
        counts: the cut is at the space before it whatever it becomes ("to" → "today"
        still leaves "The closest planet" whole), so clause 1 need not wait a token more."""
        words = list(re.finditer(r"\S+", self._buffer))
        if len(words) >= self.options.first_clause_max_words:
            for index, word in enumerate(words):
                if (index >= self.options.first_clause_min_words
                        and word.group().lower().strip(",.") in _LINKING_WORDS):
                    return word.start()
        cap = self.options.first_clause_cap_words
        if cap and len(words) > cap:
            # Not after a number ("9.81 | m/s²") or a word that leads into the next one
            # ("is the | Pacific"): back to an earlier word, at least the minimum.
            for index in range(cap, self.options.first_clause_min_words - 1, -1):
                before = words[index - 1].group().lower().strip("\"'(")
                if before not in _LEADING_WORDS and not _NUMBER.fullmatch(before):
                    return words[index].start()
        return None

    def _too_long(self) -> bool:
        return len(self._buffer.split()) > self.options.max_words

    def _emit(self, text: str, *, ends_sentence: bool) -> list[Clause]:
        spoken = speakable(text)
        if not spoken:
            return []
        clause = Clause(spoken, self._index, ends_sentence)
        self._index += 1
        return [clause]


def split_clauses(deltas: Iterable[str], options: ClauseOptions | None = None) -> Iterator[Clause]:
    """All clauses of a stream of text pieces (convenience for tests and tools)."""
    splitter = ClauseSplitter(options)
    for delta in deltas:
        yield from splitter.feed(delta)
    yield from splitter.flush()


def speakable(text: str) -> str:
    """Text as it should be spoken: markdown and emoji removed, whitespace folded."""
    text = _MARKUP.sub(" ", _CODE.sub(" ", _LINK.sub(r"\1", text)))
    text = "".join(ch for ch in text if ord(ch) < 0x2500 or ch in "—–…")
    if not any(ch.isalnum() for ch in text):
        return ""
    return " ".join(text.split())


def _is_number_dot(match: re.Match[str], text: str) -> bool:
    """'3.' in '3.5' never reaches here (needs whitespace after); '1. ' in a list does."""
    start = match.start()
    return match.group() == "." and start > 0 and text[start - 1].isdigit() and (
        start < 2 or not text[start - 2].isalnum()
    )
