"""The scripted conversations of `apace bench --quality`, read from their TOML files.

conversations.toml holds the set that may be tuned on; conversations_heldout.toml the set
no one tunes on; conversations_blind.toml a set no one here wrote either (drawn from Home
Assistant's intent templates by app/bench/blind_sample.py). The held-out and blind sets'
figures are reported on their own. The format is described at the top of
conversations.toml. Every mistake in a file is a RuleError that names the file, the
conversation and the turn, so a typo in a rule fails loudly instead of scoring nonsense.
"""

from __future__ import annotations

import datetime
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pipeline.conversation_events import BargeIn, Error, TimerFired, TimerList
from pipeline.quality import RULE_KEYS, Rule, RuleError, parse_rule

CONVERSATIONS = Path(__file__).with_name("conversations.toml")
HELD_OUT = Path(__file__).with_name("conversations_heldout.toml")
BLIND = Path(__file__).with_name("conversations_blind.toml")
Split = Literal["tuned", "held_out", "blind"]
SPLITS: tuple[tuple[Path, Split], ...] = ((CONVERSATIONS, "tuned"), (HELD_OUT, "held_out"),
                                          (BLIND, "blind"))
"""The shipped files, in the order they run, and the split each belongs to."""
EVENTS = (TimerList.type, TimerFired.type, BargeIn.type, Error.type)
"""The events a turn may expect or forbid: what a conversation sends besides its turns,
by their wire names (pipeline.conversation_events; "timers": the running timers changed —
one was set, cancelled or rang). A name nothing sends would make the rule one that cannot
fail ("timer_set" was, until found)."""
TURN_KEYS = frozenset({"say", "interrupt_after_s", "wait_s", "expect_event", "turn_event",
                       "no_event"})
CONVERSATION_KEYS = frozenset({"name", "held_out", "restart_before", "turn"})


@dataclass(frozen=True, kw_only=True)
class TurnSpec:
    say: str
    rule: Rule
    interrupt_after_s: float | None = None
    """Start the next turn this long after this reply is first heard (a barge-in)."""
    wait_s: float = 0.0
    """Silence before this turn (e.g. for a timer to ring during it)."""
    expect_event: str | None = None
    """An event that must arrive after this turn starts, before the conversation ends."""
    turn_event: str | None = None
    """An event that must arrive during this turn, before the next one starts (a timer's
    change shows on the page's list now, not when a later turn cancels it)."""
    no_event: str | None = None
    """An event that must not arrive during this turn (a near-miss sets no timer)."""


@dataclass(frozen=True, kw_only=True)
class ConversationSpec:
    name: str
    turns: tuple[TurnSpec, ...]
    held_out: bool = False
    """No one tunes on it: the held-out and blind files (their turns get other voices)."""
    blind: bool = False
    """From the blind file: no one here wrote it either."""
    restart_before: bool = False
    """Restart the server (same data directory) before this conversation."""


def date_substitutions(today: datetime.date) -> dict[str, str]:
    """What "{today}", "{tomorrow}", "{yesterday}", "{month}", "{year}" stand for in rules."""
    day = datetime.timedelta(days=1)
    return {"today": f"{today:%A}".lower(), "tomorrow": f"{today + day:%A}".lower(),
            "yesterday": f"{today - day:%A}".lower(), "month": f"{today:%B}".lower(),
            "year": str(today.year)}


def parse_conversations(text: str, source: str, *, held_out: bool = False, blind: bool = False,
                        today: datetime.date | None = None) -> list[ConversationSpec]:
    """The conversations of one TOML file; any mistake raises a RuleError naming the file,
    the conversation and the turn."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise RuleError(f"{source}: not valid TOML: {error}") from None
    subs = date_substitutions(today or datetime.date.today())
    tables = data.get("conversation")
    if not isinstance(tables, list) or not tables:
        raise RuleError(f"{source}: no [[conversation]] tables")
    found = [_conversation(table, f"{source}: conversation {i + 1}", held_out, subs)
             for i, table in enumerate(tables)]
    return [replace(c, held_out=True, blind=True) for c in found] if blind else found


def _conversation(table: dict[str, Any], where: str, held_out: bool,
                  subs: Mapping[str, str]) -> ConversationSpec:
    name = table.get("name")
    if not isinstance(name, str) or not name:
        raise RuleError(f"{where}: needs a name")
    where = f"{where.rsplit(': ', 1)[0]}: conversation {name!r}"
    if unknown := sorted(set(table) - CONVERSATION_KEYS):
        raise RuleError(f"{where}: unknown key(s) {', '.join(unknown)}")
    turns = table.get("turn")
    if not isinstance(turns, list) or not turns:
        raise RuleError(f"{where}: no [[conversation.turn]]")
    specs = tuple(_turn(t, f"{where} turn {i + 1}", subs) for i, t in enumerate(turns))
    if specs[-1].interrupt_after_s is not None:
        raise RuleError(f"{where} turn {len(specs)}: interrupt_after_s needs a next turn")
    for key in ("held_out", "restart_before"):
        if not isinstance(table.get(key, False), bool):
            raise RuleError(f"{where}: {key} must be true or false")
    return ConversationSpec(name=name, turns=specs,
                            held_out=bool(table.get("held_out", held_out)),
                            restart_before=bool(table.get("restart_before", False)))


def _turn(table: dict[str, Any], where: str, subs: Mapping[str, str]) -> TurnSpec:
    if unknown := sorted(set(table) - TURN_KEYS - RULE_KEYS):
        raise RuleError(f"{where}: unknown key(s) {', '.join(unknown)}")
    say = table.get("say")
    if not isinstance(say, str) or not say.strip():
        raise RuleError(f"{where}: needs `say`, the words spoken")
    seconds = {}
    for key in ("interrupt_after_s", "wait_s"):
        value = table.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not 0 <= value <= 120):
            raise RuleError(f"{where}: {key} must be 0-120 seconds, not {value!r}")
        seconds[key] = None if value is None else float(value)
    events = {k: table.get(k) for k in ("expect_event", "turn_event", "no_event")}
    for key, value in events.items():
        if value is not None and value not in EVENTS:
            raise RuleError(f"{where}: {key} must be one of the events the server sends "
                            f"({', '.join(EVENTS)}), not {value!r}")
    rule = parse_rule({k: v for k, v in table.items() if k in RULE_KEYS}, where, subs)
    return TurnSpec(say=say.strip(), rule=rule, interrupt_after_s=seconds["interrupt_after_s"],
                    wait_s=seconds["wait_s"] or 0.0, expect_event=events["expect_event"],
                    turn_event=events["turn_event"], no_event=events["no_event"])


def conversation_set(only: Sequence[str] = (), *, today: datetime.date | None = None,
                     files: Sequence[tuple[Path, Split]] = SPLITS) -> list[ConversationSpec]:
    """The shipped conversations (tuned, held out, blind), or just those named in `only`."""
    found = [c for path, split in files
             for c in parse_conversations(path.read_text(), path.name, today=today,
                                          held_out=split != "tuned", blind=split == "blind")]
    names = [c.name for c in found]
    if dupes := sorted({n for n in names if names.count(n) > 1}):
        raise RuleError(f"conversation names must be unique: {', '.join(dupes)}")
    if missing := [n for n in only if n not in names]:
        raise RuleError(f"no conversation {', '.join(missing)}; there are: {', '.join(names)}")
    return [c for c in found if not only or c.name in only]
