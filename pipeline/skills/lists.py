"""A shopping list, a to-do list and notes that survive restarts: the store's port and the skill.

`ListStore` is the port: items per (owner, list); models/list_store.py keeps them in the
user's SQLite file. `ListSkill` answers "add eggs and butter to my shopping list", "what's
on my shopping list", "take a note: …". Its reply is worded at match time from the store as
it is then; the change is the reply's `action`, run only when the turn is committed.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from pipeline.skills.base import SkillContext, SkillReply, normalise
from pipeline.skills.words import join_words

log = logging.getLogger(__name__)


class ListStore(Protocol):
    """Items per (owner, list name), in insertion order, no duplicates (case-insensitive).
    Thread-safe: a skill reads it in a worker thread, its action writes it on commit."""

    def add(self, owner: str, list_name: str, items: Sequence[str]) -> list[str]:
        """Add `items` not already there; returns those added."""
        ...

    def remove(self, owner: str, list_name: str, items: Sequence[str]) -> list[str]:
        """Remove `items`; returns those that were there."""
        ...

    def items(self, owner: str, list_name: str) -> list[str]: ...

    def clear(self, owner: str, list_name: str) -> int:
        """Empty the list; returns how many items it had."""
        ...

    def close(self) -> None: ...


_LISTS = {"shopping": "shopping", "grocery": "shopping", "groceries": "shopping",
          "to do": "to-do", "todo": "to-do", "to-do": "to-do"}
_LIST = r"(?:my|the|our) (?:(?P<list>shopping|grocery|groceries|to do|todo|to-do) )?list"
_TO_LIST = _LIST.replace("(?:my|the|our) ", "(?:(?:my|the|our) )?")
"""Where an add or a remove puts things: the article may be left out ("add soap to list",
"put eggs in shopping list"); a question about a list keeps it ("what is a linked list")."""
_NOW = r"(?: (?:now|right now|at the moment|currently|so far|today|please))?$"
"""What a question about a list may end with ("How many items are on my list now?")."""
_POLITE = re.compile(r"^(?:(?:hey|ok|okay|please|can you|could you|would you|will you|and|also)\b ?)+")
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("add", re.compile(
        rf"^(?:add|put|write|stick|pop|include|jot)(?: down)? (?P<items>.+?) "
        rf"(?:to|on|onto|in|into) {_TO_LIST}(?: please)?$")),
    ("add", re.compile(rf"^(?:add|put) (?:to|on) {_TO_LIST} (?P<items>.+?)(?: please)?$")),
    ("remove", re.compile(
        rf"^(?:remove|delete|take|cross|strike|scratch|erase)(?: off)? (?P<items>.+?) "
        rf"(?:off|from|out of|off of) {_TO_LIST}(?: please)?$")),
    ("clear", re.compile(rf"^(?:clear|empty|erase|wipe|reset|delete)(?: out)? {_LIST}$")),
    ("clear", re.compile(
        rf"^(?:delete|remove|clear|erase) (?:everything|all items|all the items) (?:from|on|off) {_LIST}$")),
    ("read", re.compile(rf"^(?:is there |do i have )?anything (?:on|in) {_LIST}{_NOW}")),
    ("has", re.compile(rf"^(?:is|are|do i have|have i got|did i add|did i put) (?P<items>.+?) "
                       rf"(?:on|in) {_LIST}(?: already)?{_NOW}")),
    ("read", re.compile(
        rf"^(?:what's|whats|what is|what are|what do i have|what have i got|what else is|tell me what's|"
        rf"read|read me|read out|show me|check|list|how many (?:items|things) are)\b.*\b(?:on|in)? ?"
        rf"{_LIST}{_NOW}")),
    ("read", re.compile(rf"^(?:read (?:me |out )?)?{_LIST}{_NOW}")),
    ("note", re.compile(
        r"^(?:take|make|write|jot)(?: down)? (?:a |me a )?note(?::| that| saying| of)?\s*(?P<note>.*)$")),
    ("note", re.compile(r"^(?:note|note down|add a note|save a note)(?::| that)?\s+(?P<note>.+)$")),
    ("read_notes", re.compile(
        r"^(?:read|read me|read out|what are|what's in|show me|tell me|list|what)(?: me)?(?: all)?"
        r"(?: of)? (?:my|the) notes$|^what notes do i have$|^do i have any notes$")),
    ("clear_notes", re.compile(
        r"^(?:delete|clear|erase|remove|wipe|forget)(?: all)?(?: of)? (?:my|the) notes$")),
]
_MISHEARD = (
    # "add eggs and flour …" with "add" heard as "and" (and, in a noisy room, "eggs" lost:
    # "and flour to my shopping list"): a request that starts with "and" and has no verb.
    re.compile(rf"^and (?!(?:then|go|now|also|so|back)\b)(?P<items>[a-z].*?) (?:to|onto) "
               rf"{_LIST}(?: please)?$"),
    # A verb misheard ("click bananas and yogurt on the shopping list" for "put …"): an
    # imperative that puts things on a list is an add, unless its first word asks,
    # negates, takes off or names someone.
    re.compile(
        r"^(?!(?:is|are|was|were|am|do|does|did|what|what's|whats|which|who|why|how|where|when|"
        r"can|could|should|would|will|shall|may|might|must|has|have|had|remove|delete|take|"
        r"cross|strike|scratch|erase|clear|keep|leave|not|never|no|check|read|show|tell|find|"
        r"any|anything|nothing|there|it|that|this|these|those|i|we|you|they|he|she|my|our|"
        r"the|if|so|then|and)\b)"
        rf"[a-z]+ (?P<items>.+?) (?:to|on|onto) {_LIST.replace('our)', 'our|a)')}(?: please)?$"),
)
"""Adds heard wrong, tried when nothing else matched: the first on the words as said (before
`_POLITE` strips an "and"), the second on the request."""
_SPLIT = re.compile(r"\s*(?:,|\band\b|&)\s*")
_ARTICLE = re.compile(r"^(?:some|a|an|the|more)\s+")
NOTES = "notes"


def split_items(text: str) -> list[str]:
    """ "eggs and butter" → ["eggs", "butter"]; articles and empty pieces dropped."""
    items = [_ARTICLE.sub("", piece.strip(" .")) for piece in _SPLIT.split(text)]
    return list(dict.fromkeys(item for item in items if item))


class ListSkill:
    """Shopping and to-do lists and notes, per owner, backed by a `ListStore`."""

    name = "list"

    def __init__(self, store: ListStore) -> None:
        self._store = store

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        if "list" not in text and "note" not in text:
            return None
        if ctx.transcript:  # Whisper's commas separate items: "apples, pears and milk"
            text = normalise(ctx.transcript, commas=True)
        said = text
        text = _POLITE.sub("", text)
        for intent, pattern in _PATTERNS:
            if m := pattern.match(text):
                return self._reply(intent, m, ctx.owner)
        for pattern, words in zip(_MISHEARD, (said, text), strict=True):
            if m := pattern.match(words):
                return self._reply("add", m, ctx.owner)
        return None

    def _reply(self, intent: str, m: re.Match[str], owner: str) -> SkillReply | None:
        if intent in ("note", "read_notes", "clear_notes"):
            return _notes(self._store, intent, m, owner)
        name = _LISTS.get(m["list"] or "shopping", "shopping")
        return _list_reply(self._store, intent, m, owner, name)


def _say(text: str, action: Callable[[], None] | None = None) -> SkillReply:
    return SkillReply(text=text, skill="list", action=action)


def _list_reply(
    store: ListStore, intent: str, m: re.Match[str], owner: str, name: str
) -> SkillReply | None:
    where = f"your {name} list"
    current = store.items(owner, name)
    present = {item.lower() for item in current}
    if intent == "read":
        if not current:
            return _say(f"Your {name} list is empty.")
        count = "1 item" if len(current) == 1 else f"{len(current)} items"
        return _say(f"Your {name} list has {count}: {join_words(current)}.")
    if intent == "clear":
        if not current:
            return _say(f"Your {name} list is already empty.")
        return _say(f"Cleared {where}.", lambda: _ignore(store.clear(owner, name)))
    items = split_items(m["items"])
    if not items:
        return None
    if intent in ("remove", "has"):  # what is on the list is what they likely said
        items = [_sounds_like(item, current) for item in items]
    there = [i for i in items if i.lower() in present]
    missing = [i for i in items if i.lower() not in present]
    if intent == "has":
        if not missing:
            return _say(f"Yes, {join_words(there)} {_is(there)} on {where}.")
        return _say(f"No, {join_words(missing)} {_is(missing)} not on {where}.")
    if intent == "add":
        text = f"Added {join_words(missing)} to {where}." if missing else ""
        if there:
            text += f" {join_words(there).capitalize()} {_is(there)} already on it."
        return _say(text.strip(), (lambda: _ignore(store.add(owner, name, missing))) if missing else None)
    if not there:
        # Nothing of it there while other things are: maybe misheard (second_hearing).
        return replace(_say(f"{join_words(missing).capitalize()} {_is(missing)} not on {where}."),
                       found_nothing=bool(current))
    text = f"Removed {join_words(there)} from {where}."
    return _say(text, lambda: _ignore(store.remove(owner, name, there)))


def _sounds_like(item: str, current: list[str]) -> str:
    """`item`, or the item on the list it was most likely misheard for: Whisper wrote
    "Take red off the shopping list" for "… bread …" (quality bench). The reply names the
    item acted on, so a wrong guess is heard."""
    on_list = {i.lower(): i for i in current}
    if item.lower() in on_list:
        return item
    close = difflib.get_close_matches(item.lower(), list(on_list), n=1, cutoff=0.75)
    return on_list[close[0]] if close else item


def _is(items: list[str]) -> str:
    return "is" if len(items) == 1 else "are"


def _ignore(_: object) -> None:
    """An action returns None; the store's return value is for tests and logs."""


def _notes(store: ListStore, intent: str, m: re.Match[str], owner: str) -> SkillReply | None:
    notes = store.items(owner, NOTES)
    if intent == "note":
        note = (m["note"] or "").strip(" :")
        if not note:
            return _say("What should the note say? You can say, for example, take a note: call the plumber.")
        if note.lower() in {n.lower() for n in notes}:
            return _say(f"You already have that note: {note}.")
        return _say(f"Noted: {note}.", lambda: _ignore(store.add(owner, NOTES, [note])))
    if not notes:
        return _say("You have no notes.")
    if intent == "clear_notes":
        count = "your note" if len(notes) == 1 else f"your {len(notes)} notes"
        return _say(f"Deleted {count}.", lambda: _ignore(store.clear(owner, NOTES)))
    if len(notes) == 1:
        return _say(f"You have one note: {notes[0]}.")
    spoken = " ".join(f"Note {i}: {note}." for i, note in enumerate(notes, 1))
    return _say(f"You have {len(notes)} notes. {spoken}")
