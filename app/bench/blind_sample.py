"""Draw conversations_blind.toml: questions nobody here wrote, from Home Assistant's templates.

Run once by a person (`python -m app.bench.blind_sample --seed N`), never at bench time: the
file it writes is the blind split of `apace bench --quality`. Each turn is one sentence of Home
Assistant's English intent templates (the `home-assistant-intents` package), expanded as
hassil's own sampler expands it (`hassil.sample.sample_sentence`), then recognised back by
hassil so that its slots are what Home Assistant would read from it; its rule is made from
the intent and those slots, by machine. The conversation plan (which intents follow which)
is fixed here so that a status, pause or cancel follows a start; the sentences, the slot
values and which template says them are drawn with one seeded `random.Random`.

Slot values come from the short lists below: Home Assistant's own lists are filled in by a
home's devices (areas, entity names) or are wildcards (items, timer names), so a sample
needs values. Numbers are drawn from a kitchen's range, not the templates' 1-100, and a
started timer lasts at least `MIN_TIMER_S` so that it cannot ring mid-conversation.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import random
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BLIND_FILE = Path(__file__).with_name("conversations_blind.toml")
SEED = 1204
PLAN: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("blind-timer-check-pause-add", ("HassStartTimer", "HassTimerStatus", "HassPauseTimer",
                                     "HassUnpauseTimer", "HassIncreaseTimer", "HassCancelTimer")),
    ("blind-timer-shorter", ("HassStartTimer", "HassDecreaseTimer", "HassTimerStatus",
                             "HassIncreaseTimer", "HassCancelTimer", "HassGetCurrentTime")),
    ("blind-clock-list-weather", ("HassGetCurrentTime", "HassGetCurrentDate",
                                  "HassShoppingListAddItem", "HassGetWeather",
                                  "HassShoppingListAddItem", "HassShoppingListAddItem",
                                  "HassGetWeather")),
    ("blind-timer-paused-status", ("HassStartTimer", "HassPauseTimer", "HassTimerStatus",
                                   "HassUnpauseTimer", "HassGetCurrentDate", "HassCancelTimer")),
)
"""Conversations and their intents in order: every timer is started before it is asked
about and cancelled before its conversation ends (timers outlive a session)."""
FILL: Mapping[str, tuple[str, ...]] = {
    "shopping_list_item": ("milk", "eggs", "bread", "apples", "coffee", "olive oil", "rice",
                           "dish soap", "bananas", "orange juice", "cheese", "toilet paper"),
    "timer_name": ("pasta", "tea", "laundry", "pizza", "bread", "rice"),
    "name": ("London", "Paris", "Chicago", "Berlin", "Tokyo"),
    "timer_half": ("half",),  # not "1/2": the sentences are spoken, and no one says a slash
}
START_RANGES = {"hours": (1, 2), "minutes": (1, 59), "seconds": (5, 59)}
CHANGE_RANGES = {"hours": (1, 1), "minutes": (1, 10), "seconds": (10, 50)}
"""Numbers for a new timer, and for what is added to or taken from one."""
MIN_TIMER_S = 180
UNITS = ("hours", "minutes", "seconds")
_SECONDS = {"hours": 3600, "minutes": 60, "seconds": 1}
_FOLLOW_UPS = frozenset({"HassTimerStatus", "HassPauseTimer", "HassUnpauseTimer",
                         "HassIncreaseTimer", "HassDecreaseTimer", "HassCancelTimer"})
_CHANGES = frozenset({"HassIncreaseTimer", "HassDecreaseTimer"})
_TRIES = 200


@dataclass(frozen=True)
class Drawn:
    intent: str
    say: str
    slots: dict[str, Any]


def versions() -> dict[str, str]:
    return {name: importlib.metadata.version(name)
            for name in ("home-assistant-intents", "hassil")}


def load_intents() -> Any:
    """Home Assistant's English intents, parsed by hassil."""
    from importlib import resources

    from hassil import Intents

    data = json.loads((resources.files("home_assistant_intents") / "data" / "en.json").read_text())
    return Intents.from_dict(data)


def _all_lists(intents: Any) -> dict[str, Any]:
    """Every list a template names: HA's own, empty for those a home would fill (floors,
    devices) so that recognition can run, and ours (`FILL`) where a sample needs values."""
    from hassil.intents import TextSlotList

    names: set[str] = set()
    for intent in intents.intents.values():
        for data in intent.data:
            rules = {**intents.expansion_rules, **data.expansion_rules}
            for sentence in data.sentences:
                names |= set(sentence.list_names(rules))
    lists = {name: TextSlotList(name=name, values=[]) for name in sorted(names)}
    lists.update(intents.slot_lists)
    for name, values in FILL.items():
        lists[name] = TextSlotList.from_tuples([(v, 30 if name == "timer_half" else v)
                                                for v in values], name=name)
    return lists


def _slots_of(sentence: Any, rules: Mapping[str, Any]) -> dict[str, str]:
    """Slot name → list name, for each list the template uses."""
    group = sentence.expression
    refs = group.list_references(rules) if hasattr(group, "list_references") else []
    return {ref.slot_name: ref.list_name for ref in refs}


def _allowed(intent: str, timer: Mapping[str, Any] | None) -> set[str]:
    """The slots a template may use: no area (a timer here has none), no delayed command
    (apace runs none), and for a follow-up only what names the timer that was started."""
    if intent == "HassStartTimer":
        return {*UNITS, "name"}
    if intent not in _FOLLOW_UPS:
        return {"item", "name"}
    allowed = set(UNITS) if intent in _CHANGES else set()
    if timer and "name" in timer:
        allowed.add("name")
    units = [u for u in UNITS if timer and u in timer]
    if len(units) == 1:  # "the 5 minute timer" names a timer of exactly 5 minutes
        allowed.add(f"start_{units[0]}")
    return allowed


def _overrides(slots: Mapping[str, str], timer: Mapping[str, Any] | None,
               rng: random.Random, intent: str) -> dict[str, Any]:
    """One value per numeric list the template uses, drawn (or the started timer's)."""
    from hassil.intents import RangeSlotList, TextSlotList

    out: dict[str, Any] = {}
    ranges = CHANGE_RANGES if intent in _CHANGES else START_RANGES
    for slot, list_name in slots.items():
        if list_name == "timer_name" and timer and intent in _FOLLOW_UPS:
            out[list_name] = TextSlotList.from_strings([str(timer["name"])], name=list_name)
        if not list_name.startswith("timer_") or list_name in FILL:
            continue
        if slot.startswith("start_"):
            value = int(timer[slot.removeprefix("start_")]) if timer else 1
        else:
            low, high = ranges[slot]
            value = rng.randint(low, high)
        out[list_name] = RangeSlotList(name=list_name, start=value, stop=value)
    return out


def _recognised(text: str, intent: str, intents: Any, lists: Mapping[str, Any]
                ) -> dict[str, Any] | None:
    """The slots Home Assistant reads from `text` as `intent` (None: it reads another)."""
    from hassil import recognize_all

    context = {"domain": "weather"} if intent == "HassGetWeather" else None
    for result in recognize_all(text, intents, slot_lists=dict(lists), intent_context=context,
                                language="en"):
        if result.intent.name == intent:
            return {name: _plain(e.value) for name, e in result.entities.items()}
    return None


def _plain(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _fits(intent: str, slots: Mapping[str, Any], timer: Mapping[str, Any] | None) -> bool:
    total = duration_s(slots)
    if intent == "HassStartTimer":
        return total >= MIN_TIMER_S
    if intent == "HassDecreaseTimer" and not (timer and 0 < total <= duration_s(timer) // 2):
        return False  # taking away more than half could make it ring mid-conversation
    return all(timer is not None and timer.get(k.removeprefix("start_")) == v
               for k, v in slots.items()
               if k.startswith("start_") or (k == "name" and intent in _FOLLOW_UPS))


def duration_s(slots: Mapping[str, Any]) -> int:
    return int(sum(float(slots.get(u, 0)) * _SECONDS[u] for u in UNITS))


def draw_turn(intent: str, timer: Mapping[str, Any] | None, rng: random.Random,
              intents: Any, lists: Mapping[str, Any]) -> Drawn:
    """One sentence of `intent`: a template drawn among those allowed, values drawn, one
    of its expansions drawn; redrawn until hassil reads it back as `intent`, and it fits."""
    from hassil.sample import sample_sentence

    allowed = _allowed(intent, timer)
    templates = []
    for data in intents.intents[intent].data:
        rules = {**intents.expansion_rules, **data.expansion_rules}
        templates += [(s, rules, slots) for s in data.sentences
                      if set(slots := _slots_of(s, rules)) <= allowed]
    for _ in range(_TRIES):
        sentence, rules, slots = rng.choice(templates)
        mine = {**lists, **_overrides(slots, timer, rng, intent)}
        texts = sorted({" ".join(t.split()) for t in sample_sentence(
            sentence, mine, rules, language="en")})
        say = rng.choice(texts)
        found = _recognised(say, intent, intents, mine)
        if found is not None and _fits(intent, found, timer):
            return Drawn(intent, say, found)
    raise RuntimeError(f"no sentence of {intent} fits after {_TRIES} draws")


def draw(seed: int, plan: Sequence[tuple[str, Sequence[str]]] = PLAN
         ) -> list[tuple[str, list[Drawn]]]:
    """Every planned conversation's turns, drawn with `seed`."""
    intents = load_intents()
    lists = _all_lists(intents)
    rng = random.Random(seed)
    out = []
    for name, steps in plan:
        timer: dict[str, Any] | None = None
        turns = []
        for intent in steps:
            turn = draw_turn(intent, timer, rng, intents, lists)
            if intent == "HassStartTimer":
                timer = dict(turn.slots)
            turns.append(turn)
        out.append((name, turns))
    return out


# ---- rules ---------------------------------------------------------------------------


def _number(n: int) -> str:
    from num2words import num2words

    forms = [str(n), num2words(n).replace("-", " ")] + (["a", "an"] if n == 1 else [])
    return "(" + "|".join(forms) + ")"


def duration_patterns(slots: Mapping[str, Any]) -> list[str]:
    """Regexes that find the duration in a normalised reply: every unit in digits or words
    (in any order), the whole in its smallest unit, or "N and a half"."""
    parts = {u: int(slots[u]) for u in UNITS if slots.get(u)}
    if not parts:
        return []
    said = [rf"\b{_number(n)} {u[:-1]}s?\b" for u, n in parts.items()]
    out = [said[0] if len(said) == 1 else "".join(f"(?=.*{p})" for p in said)]
    if len(parts) > 1:
        smallest = list(parts)[-1]
        out.append(rf"\b{duration_s(parts) // _SECONDS[smallest]} {smallest[:-1]}s?\b")
    for big, small in (("hours", "minutes"), ("minutes", "seconds")):
        if parts.get(small) == 30 and set(parts) == {big, small}:
            out.append(rf"\b{_number(parts[big])} and a half {big[:-1]}s?\b")
            if parts[big] == 1:
                out.append(rf"\b(a|an|one) {big[:-1]} and a half\b")
        if set(parts) == {small} and parts[small] == 30 and small == "minutes":
            out.append(r"\bhalf an? hour\b")
    return out


CLOCK = [r"\b\d{1,2}:\d{2}\b", r"\b\d{1,2} ?(a\.?m|p\.?m)\b", r"\bo'?clock\b", r"\bnoon\b",
         r"\bmidnight\b", r"\b(half|quarter) (past|to)\b"]
_ADDED = r"\b(add(ed)?|extend\w*|increas\w*|longer)\b"
_TAKEN = r"\b(remov\w*|subtract\w*|shorten\w*|shorter|reduc\w*|decreas\w*|took|taken)\b"


def rule(turn: Drawn) -> dict[str, Any]:
    """The machine-made rule for one drawn turn (the keys of conversations.toml)."""
    intent, slots = turn.intent, turn.slots
    timer_status = r"\b(hours?|minutes?|seconds?|paused)\b"
    # A timer really changed only if the page's list did, in this turn: words alone could
    # be a reply that claims it.
    changed = {"turn_event": "timers"}
    rules: dict[str, dict[str, Any]] = {
        "HassStartTimer": {"accept": duration_patterns(slots), **changed},
        "HassTimerStatus": {"accept": [timer_status], "must_not": ["no timer", "no timers"]},
        "HassPauseTimer": {"accept": [r"\bpaused?\b"], **changed},
        "HassUnpauseTimer": {"accept": [r"\b(resum\w*|unpaus\w*|continu\w*|restart\w*|"
                                        r"running|started|going)\b"], **changed},
        "HassIncreaseTimer": {"accept": [*duration_patterns(slots), _ADDED], **changed},
        "HassDecreaseTimer": {"accept": [*duration_patterns(slots), _TAKEN], **changed},
        "HassCancelTimer": {"accept": [r"\b(cancel\w*|stopp?ed|remov\w*|delet\w*|cleared|off)\b"],
                            **changed},
        "HassGetCurrentTime": {"accept": CLOCK},
        "HassGetCurrentDate": {"accept": [r"\b{today}\b", r"\b{month}\b"]},
        "HassShoppingListAddItem": {"must": [str(slots.get("item", "")).lower()]},
        "HassGetWeather": {"refusal": True, "must_not": ["degrees"]},
    }
    out = rules[intent]
    return out if intent == "HassGetWeather" else {**out, "refusal": False}


# ---- the file ------------------------------------------------------------------------


def header(seed: int, date: datetime.date, found: Mapping[str, str]) -> str:
    return f"""\
# BLIND: `apace bench --quality` reports these conversations' useful % and right % on their
# own ("blind"), apart from the tuned set and conversations_heldout.toml.
#
# NO ONE TUNES ON THIS FILE, and no one here wrote it: drawn once by app/bench/blind_sample.py
# with seed {seed} on {date.isoformat()} from home-assistant-intents {found["home-assistant-intents"]} \
(hassil {found["hassil"]}).
# Each `say` is one of Home Assistant's English intent templates as hassil expands it, slot
# values from the generator's lists; each rule is made by machine from the intent and the
# slots hassil reads back (the comment above each turn). Do not edit a sentence or a rule by
# hand, do not add their wording to any skill's phrase list, and do not change prompts,
# skills or thresholds to make them pass. If the data is wrong, draw again with a new seed
# and say so in the commit. Format: see conversations.toml.
"""


def _value(value: Any) -> str:
    """A TOML value: JSON's strings, numbers, booleans and lists are TOML's too."""
    return json.dumps(value)


def render(seed: int, date: datetime.date, drawn: Sequence[tuple[str, Sequence[Drawn]]],
           found: Mapping[str, str]) -> str:
    lines = [header(seed, date, found)]
    for name, turns in drawn:
        lines += ["[[conversation]]", f"name = {_value(name)}", "held_out = true", ""]
        for turn in turns:
            slots = ", ".join(f"{k}={v}" for k, v in sorted(turn.slots.items()))
            lines += [f"# {turn.intent}" + (f": {slots}" if slots else ""),
                      "[[conversation.turn]]", f"say = {_value(turn.say)}"]
            lines += [f"{key} = {_value(value)}" for key, value in rule(turn).items()]
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def blind_text(seed: int, date: datetime.date) -> str:
    """The file that seed draws, dated `date`, from the installed data."""
    return render(seed, date, draw(seed), versions())


HEADER = re.compile(r"drawn once by app/bench/blind_sample\.py\s*\n?#?\s*with seed (\d+) on "
                    r"(\d{4}-\d{2}-\d{2}) from home-assistant-intents (\S+)")


def provenance(text: str) -> tuple[int, datetime.date, str] | None:
    """(seed, date, data version) as a blind file's header names them."""
    match = HEADER.search(text)
    if match is None:
        return None
    return (int(match[1]), datetime.date.fromisoformat(match[2]), match[3])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.bench.blind_sample",
                                     description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--date", type=datetime.date.fromisoformat,
                        default=datetime.date.today(), help="the date the header names")
    parser.add_argument("--out", default=str(BLIND_FILE), help="the file to write; - for stdout")
    parser.add_argument("--force", action="store_true",
                        help="overwrite an existing file (a new draw: say so in the commit)")
    args = parser.parse_args(argv)
    text = blind_text(args.seed, args.date)
    if args.out == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.out)
    if out.exists() and not args.force:
        print(f"{out} exists: it is drawn once. Pass --force to draw it again.", file=sys.stderr)
        return 1
    out.write_text(text)
    print(f"wrote {out}: {text.count('[[conversation.turn]]')} turns, seed {args.seed}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
