"""The built-in skills offered to the LLM as tools, so that paraphrases reach them.

The skills match what people usually say ("set a timer for ten minutes"); a tool-calling
LLM tier (Qwen2.5's chat template declares tools) also catches "let me know when ten
minutes are up". A tool call is not executed by new code: it is turned back into the
plain request the skill already understands (`request_for`) and answered by the same
skills router, so a paraphrase gets exactly the reply, confirmation and side effect the
plain words would. Pure: no model, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from pipeline.skills.words import to_digits


def _tool(name: str, description: str, **params: str) -> dict[str, Any]:
    required = [p for p in params if not p.endswith("?")]
    properties = {p.rstrip("?"): {"type": "string", "description": d} for p, d in params.items()}
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties,
                       "required": [p.rstrip("?") for p in required]}}}


TOOLS: list[dict[str, Any]] = [
    _tool("set_timer", "Start a countdown timer that rings when it is done.",
          duration="how long, e.g. '10 minutes'", **{"name?": "what it is for, e.g. 'pasta'"}),
    _tool("set_alarm", "Ring at a time of day.", time="e.g. '7 am'"),
    _tool("set_reminder", "Say a reminder after some time.",
          duration="e.g. '20 minutes'", task="what to remind about"),
    _tool("timer_status", "How long is left on the timers, or cancel, pause or resume one.",
          **{"action": "'left', 'cancel', 'pause' or 'resume'", "name?": "which timer"}),
    _tool("add_to_list", "Add items to the user's shopping list.", items="e.g. 'eggs and milk'"),
    _tool("read_list", "Read the user's shopping list."),
    _tool("calculate", "Arithmetic, written in words or digits.", expression="e.g. '15% of 80'"),
    _tool("convert_units", "Convert a quantity to another unit.",
          quantity="e.g. '3 ounces'", unit="e.g. 'grams'"),
    _tool("current_time", "The time, date or day of the week now.",
          **{"what?": "'time', 'date' or 'day'"}),
    _tool("spell_word", "Spell a word letter by letter.", word="the word"),
]

_TIMER_VERBS = ("cancel", "pause", "resume")
_REQUESTS: dict[str, Callable[[Mapping[str, str]], str]] = {
    "set_timer": lambda a: (f"set a {a['name']} timer for {a['duration']}" if a.get("name")
                            else f"set a timer for {a['duration']}"),
    "set_alarm": lambda a: f"set an alarm for {a['time']}",
    "set_reminder": lambda a: f"in {a['duration']} remind me to {a['task']}",
    "timer_status": lambda a: (
        f"{a['action']} the {a['name']} timer" if a.get("action") in _TIMER_VERBS and a.get("name")
        else f"{a['action']} the timer" if a.get("action") in _TIMER_VERBS
        else f"how long is left on the {a['name']} timer" if a.get("name")
        else "how much time is left"),
    "add_to_list": lambda a: f"add {a['items']} to my shopping list",
    "read_list": lambda a: "what's on my shopping list",
    "calculate": lambda a: f"what is {a['expression']}",
    "convert_units": lambda a: f"convert {a['quantity']} to {a['unit']}",
    "current_time": lambda a: {"date": "what's the date today", "day": "what day is it"}.get(
        a.get("what", ""), "what time is it"),
    "spell_word": lambda a: f"how do you spell {a['word']}",
}

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_WORD = re.compile(r"[a-z']+")
_DURATION = r"\b(?:timers?|minutes?|mins?|seconds?|secs?|hours?|hrs?)\b"
_CLOCK_TIME = (r"\balarm|\bwake\b|\bget me up\b|\bat \d|\d ?(?:am|pm|a\.m\.|p\.m\.|o'clock)\b"
               r"|\bnoon\b|\bmidnight\b")
_KEYWORDS = {  # a call is believed only if the user's words say something of the kind:
    # every pattern must be found ("was 1900 a late year", misheard in noise, had the 0.5B
    # set a timer for 1900 minutes: a number alone is not a duration).
    "set_timer": (r"\d", _DURATION), "set_alarm": (r"\d|\bnoon\b|\bmidnight\b", _CLOCK_TIME),
    "set_reminder": (r"\bremind",),
    # "How long is left?" is a timer's; "how long is left of the school year" is not.
    "timer_status": (r"\btimers?\b|\bcancel\b|\bstop\b|\bpause\b|\bresume\b"
                     r"|\bleft\b(?! (?:of|in|until|till|before)\b)",),
    "add_to_list": (r"\blist\b",), "read_list": (r"\blist\b",), "calculate": (r"\d",),
    "convert_units": (r"\d",), "current_time": (r"\b(?:time|date|day|clock|year|month)\b",),
    "spell_word": (r"\bspell",),
}
_AGAINST = {
    # "Increase my timer by 21 seconds", "… four minutes to my timer": a change to a running
    # timer (the intents' job) is never a new one, however the 0.5B reads it.
    "set_timer": r"\b(?:increase|decrease|extend|subtract|reduce)\b"
                 r"|\b(?:to|onto|on|off|from) (?:my|the|that|this) timer\b",
}
"""Words that refute a call of the kind their keywords allow."""


def _supports(name: str, said: str) -> bool:
    """Whether the user's words (through `to_digits`) support a call to tool `name`."""
    if name not in _KEYWORDS:
        return False
    against = _AGAINST.get(name)
    return all(re.search(pattern, said, re.IGNORECASE) for pattern in _KEYWORDS[name]) and not (
        against and re.search(against, said, re.IGNORECASE))


_FREE_TEXT = ("name", "items", "task", "word")
"""Arguments that must come from the user's words (a small model invents a 'pasta')."""


def may_call(transcript: str) -> bool:
    """True when the user's words could support a call to some tool (its `_KEYWORDS`);
    False: any call would be refused, so the LLM is kept from writing one (no tokens spent
    on a call, and no second pass to answer in words)."""
    said = to_digits(transcript)
    return any(_supports(name, said) for name in _KEYWORDS)


_NAMED = re.compile(r"""\bname\b["']?\s*[:=]\s*["']?([A-Za-z][\w -]*?)\s*["',>\n}]""", re.IGNORECASE)
"""The tool a held call names, once its name is written out: JSON ('"name": "set_timer",'),
markup ('<function name="set timer">'), or loose ('json name: set_timer,')."""


def refused(held: str, transcript: str) -> bool:
    """True as soon as a call being written names a tool the user's words cannot support
    (or no tool at all): it would be refused at its end, so the rest need not be made.
    False while the name is unwritten, or for a tool the words may support."""
    found = _NAMED.search(held)
    if found is None:
        return False
    name = re.sub(r"[\s-]+", "_", found.group(1).strip().lower())
    return not _supports(name, to_digits(transcript))


_CALL_OPENERS = (b"{", b"[", b"<", b"`")
_TOOL_WORDS = (b"json", b"function", b"tool")


def in_calls_only(piece: bytes) -> bool:
    """True for a token a reply in words never needs but tool calls and talk about tools are
    made of: one opening a JSON object or array, a tag (`<tool_call>`, '<tools>'), a code
    fence, an identifier's underscore ('_timer'), or the words json, function(s), tool(s).
    A reply told not to call is kept from every one: with only `{` and `<tool_call>` kept
    out, the 0.5B wrote '```json name: set_timer' and '<tools> <function name=...' to "How
    many days are there in a", and "The function `timer_status` returns the number of days
    left on the timers" to the same words trailing off."""
    text = piece.lstrip()
    return text[:1] in _CALL_OPENERS or b"_" in piece or text.lower().startswith(_TOOL_WORDS)


def request_for(call_text: str, transcript: str) -> str | None:
    """The plain request a tool call stands for ("set a pasta timer for 8 minutes"), or
    None when it is not a call to one of `TOOLS` that the user's words support."""
    found = re.search(r'\{\s*"name"', call_text)
    try:
        call = _decode(call_text[found.start():]) if found else _tagged_call(call_text)
        if call is None:
            return None
        name, args = call["name"], call.get("arguments", {})
        if isinstance(args, str):
            args = json.loads(args)
        arguments = {str(k): str(v) for k, v in dict(args).items() if v not in (None, "")}
        said = to_digits(transcript)
        if name not in _REQUESTS or not _supports(name, said):
            return None
        kept = _grounded(arguments, said)
        return _REQUESTS[name](kept) if kept is not None else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


_TAGGED_NAME = re.compile(r'<(?:function|invoke|tool)\b[^>]*?(?:name\s*=\s*"([^"]+)"|=\s*([\w -]+))',
                          re.IGNORECASE)
_TAGGED_ARG = re.compile(r'<parameter\s*(?:name\s*=\s*"(\w+)"|=\s*(\w+))\s*>([^<]*)<'
                         r'|<(\w+)>([^<]*)</\4>')


def _tagged_call(text: str) -> dict[str, Any] | None:
    """A call written as markup (the 0.5B, after a misheard question: '<tools> <function
    name="set timer"> <arguments> <duration>1900</duration> …'), as name and arguments."""
    found = _TAGGED_NAME.search(text)
    if found is None:
        return None
    name = re.sub(r"[\s-]+", "_", (found.group(1) or found.group(2)).strip().lower())
    arguments = {m.group(1) or m.group(2) or m.group(4): (m.group(3) or m.group(5)).strip()
                 for m in _TAGGED_ARG.finditer(text, found.end())}
    return {"name": name, "arguments": arguments}


def _decode(text: str) -> Any:
    """The JSON object `text` starts with; one or two closing braces may be missing (the
    0.5B sometimes stops before the last one)."""
    body = text.rstrip().removesuffix("```").rstrip()
    for tail in ("", "}", "}}"):
        try:
            return json.JSONDecoder().raw_decode(body + tail)[0]
        except ValueError:
            continue
    raise ValueError("not a JSON object")


def _grounded(arguments: dict[str, str], said: str) -> dict[str, str] | None:
    """`arguments` as far as the user said them: free-text words must be the user's
    (list items not said are dropped), and every number must be one the user said."""
    heard = set(_WORD.findall(said)) | set(_NUMBER.findall(said))
    kept: dict[str, str] = {}
    for key, value in arguments.items():
        value_digits = to_digits(value)
        if any(n not in heard for n in _NUMBER.findall(value_digits)):
            return None  # a number the user never said
        if key == "items":
            items = [i for i in re.split(r",|\band\b", value) if i.strip()
                     and set(_WORD.findall(i.lower())) <= heard]
            if not items:
                return None
            value = " and ".join(i.strip() for i in items)
        elif key in _FREE_TEXT and not set(_WORD.findall(value_digits)) <= heard:
            continue  # an invented name or task: left out
        kept[key] = value
    return kept


_OPENING = '{"name"'


_FENCE = "```json"


_MARKERS = re.compile(r"(?:\s|`|json\b|<tool_call>|\{|\[)+", re.IGNORECASE)
"""What may come before a call's key: a Markdown fence (its backticks may be dropped, or
spaced: "``` json"), the `<tool_call>` tag, one or two braces, a bracket (the 0.5B, to
"mm-hm" heard as "And then make some.", said '[ "name": "set timer",' aloud; on the room
bench, to a misheard question, '[ "set timer", "parameters":', and every later reply of
that session copied it from the history)."""


_MARKUP_OPENING = re.compile(r"<(?:/|[A-Za-z_]|$)")
"""A reply that opens with a tag ('<tools> <function name="set timer">', said aloud once)."""
_CALL_TAG = re.compile(r"</?(?:tools?|tool_calls?|functions?|function_calls?|invoke)\b", re.IGNORECASE)
"""An opening tag that may hold a call: such a reply is held to its end, another ('<b>') is
said as it comes, its tags not read out (pipeline.answer.clauses.speakable)."""


def may_be_call(text: str) -> bool:
    """True while the reply so far could still be a tool call (the template asks for
    `<tool_call>` then JSON; the tags are special tokens and may be dropped from text;
    some models double the opening brace, pretty-print it, or put the JSON in a Markdown
    code block: the 1.5B once said 'json "name": "set timer",' aloud, the 0.5B "json name:
    set timer," twice). After such a marker an unquoted `name` key is a call too (not
    JSON: it is never run, the turn is answered in words instead)."""
    start = text.lstrip()
    if _MARKUP_OPENING.match(start) and not start.startswith("<tool_call>"):
        return ">" not in start or bool(_CALL_TAG.match(start))  # its first tag decides
    if any(marker.startswith(start) for marker in (_FENCE, "json", "<tool_call>")):
        return True  # (also "```", "`" and "js": a fence may be coming)
    marked = _MARKERS.match(start)
    rest = start[marked.end():] if marked else start
    if not rest or (marked and any(m.startswith(rest) for m in ("json", "<tool_call>"))):
        return True  # nothing but markers yet, or one coming ("``` js")
    if rest.startswith('"') and marked and any(c in marked.group() for c in "[{"):
        return True  # JSON whatever its key: '[ "set timer", "parameters":' is never said
    if rest.startswith('"') or not marked:
        return _OPENING[1:].startswith(rest[: len(_OPENING) - 1])
    return "name".startswith(rest[:4]) and (len(rest) <= 4 or rest[4] in "\"': ")


_LEADING_MARKERS = re.compile(r"\s*(?:`+\s*(?:json\b)?|<tool_call>)\s*", re.IGNORECASE)


def without_markers(held: str) -> str:
    """Held text that turned out not to be a call, without the fence or tag it opened with
    (a reply in a code block: "```json\nThe capital..." is said from "The")."""
    return _LEADING_MARKERS.sub("", held, count=1) if _LEADING_MARKERS.match(held) else held
