"""Timer requests recognised by hassil (Home Assistant's timer intents and apace's own),
carried out on the timer store: start, cancel, pause, resume, add or take away time,
status, alarms and reminders.

What changes the store is the reply's `action` (run once, at commit); the words are
computed now, from the store as it is. The conversation's timers last talked about (a
status answer's) are remembered at commit, so "and the other one?" and "pause it" work.
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.skills.base import SkillContext, SkillReply
from pipeline.skills.intents import Recognised
from pipeline.skills.timer_phrases import SetTimer, Target, point_of_view
from pipeline.skills.timer_store import Timer
from pipeline.skills.timers import (
    CANNOT_RING,
    TimerSkill,
    left_on_each,
    matching,
    misses,
    nothing_matches,
    told_apart,
    which_one,
)
from pipeline.skills.when import find_clock
from pipeline.skills.words import parse_duration, say_duration, say_remaining

_VERBS = {"HassPauseTimer": "pause", "HassUnpauseTimer": "resume",
          "HassIncreaseTimer": "add time to", "HassDecreaseTimer": "take time off"}
_MORE = frozenset({"more", "extra", "additional"})


def slot_seconds(found: Recognised, prefix: str = "") -> float | None:
    """The duration in a match: HA's {hours}/{minutes}/{seconds} range slots (their
    `start_` forms with `prefix="start_"`), or apace's {duration} wildcard."""
    total = sum(found.number(prefix + unit) * scale
                for unit, scale in (("hours", 3600), ("minutes", 60), ("seconds", 1)))
    if total:
        return total
    said = found.text("duration") if not prefix else None
    # "add 5 more minutes": the wildcard holds the "more" said inside the duration.
    return parse_duration(" ".join(w for w in said.split() if w not in _MORE)) if said else None


class TimerIntents:
    """Answers the timer intents for one conversation's `TimerSkill` (and its store)."""

    name = "timer"

    def __init__(self, skill: TimerSkill) -> None:
        self._skill = skill
        self._timers = skill.timers
        self._focus: tuple[int, ...] = ()
        """The timers the last status answer was about (set at commit)."""

    def answer(self, found: Recognised, ctx: SkillContext) -> SkillReply | None:
        """The reply to a timer intent, or None when its slots do not make sense (a
        {duration} that is not one): the regex skills and then the LLM get the words."""
        intent = found.intent
        if intent == "HassStartTimer":
            return self._start(found, ctx)
        if intent == "ApaceSetAlarm":
            return self._alarm(found, ctx)
        if intent == "ApaceSetReminder":
            return self._reminder(found, ctx)
        if intent == "HassCancelAllTimers":
            return self._skill.stop(Target(kind="timer", every=True), ctx)
        if intent == "ApaceTimerStatusOther":
            return self._other(ctx)
        target = _target(found)
        if target is None:
            return None
        if intent == "HassCancelTimer":
            return self._skill.stop(target, ctx)
        if intent == "HassTimerStatus":
            return self._status(target, ctx)
        if intent in _VERBS:
            return self._change(found, target, ctx)
        return None

    def _say(self, text: str, action: Callable[[], None] | None = None, *,
             found_nothing: bool = False) -> SkillReply:
        return SkillReply(text=text, skill=self.name, action=action, found_nothing=found_nothing)

    def _start(self, found: Recognised, ctx: SkillContext) -> SkillReply | None:
        seconds, name = slot_seconds(found), found.text("name")
        if seconds is None or seconds <= 0:
            return None
        if name is not None and parse_duration(name) is not None:
            return None  # "a {duration} timer for {name}" read the wrong way round
        return self._skill.start(SetTimer(kind="timer", seconds=seconds, name=name), ctx)

    def _alarm(self, found: Recognised, ctx: SkillContext) -> SkillReply | None:
        clock = find_clock("at " + (found.text("clock") or ""))
        if clock is None:
            return None
        morning = bool(found.metadata.get("morning"))
        return self._skill.start(SetTimer(kind="alarm", clock=clock, prefer_morning=morning), ctx)

    def _reminder(self, found: Recognised, ctx: SkillContext) -> SkillReply | None:
        task = found.text("task")
        said = found.text("clock")
        seconds = None if said else slot_seconds(found)
        clock = find_clock("at " + said) if said else None
        if task is None or (seconds is None and clock is None):
            return None
        return self._skill.start(SetTimer(kind="reminder", seconds=seconds, clock=clock,
                                          task=point_of_view(task)), ctx)

    def _status(self, target: Target, ctx: SkillContext) -> SkillReply:
        everything = self._timers.active()
        chosen = matching(everything, target)
        if target.name is None and target.seconds is None:
            chosen = [t for t in chosen if t.kind == "timer"] or matching(everything, Target())
        if not chosen:
            return self._say(nothing_matches(target, everything),
                             found_nothing=misses(target, everything))
        return self._tell(chosen, ctx)

    def _other(self, ctx: SkillContext) -> SkillReply | None:
        if not self._focus:
            return None
        others = [t for t in self._timers.active() if t.id not in self._focus]
        if not others:
            return self._say("That's the only one running.")
        return self._tell(others, ctx)

    def _tell(self, timers: list[Timer], ctx: SkillContext) -> SkillReply:
        ids = tuple(t.id for t in timers)

        def remember() -> None:
            self._focus = ids

        return self._say(left_on_each(timers, ctx), remember)

    def _change(self, found: Recognised, target: Target, ctx: SkillContext) -> SkillReply | None:
        verb = _VERBS[found.intent]
        delta = slot_seconds(found) if verb.startswith(("add", "take")) else 0.0
        if delta is None:
            return None
        if verb.startswith("take"):
            delta = -delta
        picked = self._pick(target, verb, ctx.monotonic)
        if isinstance(picked, str):
            return self._say(picked, found_nothing=misses(target, self._timers.active()))
        if not self._timers.rings:
            return self._say(CANNOT_RING["timer"])
        if verb in ("pause", "resume"):
            return self._pause_or_resume(picked, verb == "pause", ctx)
        return self._adjust(picked, delta, ctx)

    def _pause_or_resume(self, timer: Timer, pause: bool, ctx: SkillContext) -> SkillReply:
        timers, now = self._timers, ctx.monotonic
        left = say_remaining(timers.remaining(timer, now))
        if timer.paused == pause:
            return self._say(f"The {timer.label} is already {'paused' if pause else 'running'}.")

        def change() -> None:
            (timers.pause if pause else timers.resume)([timer.id], now)

        text = (f"{_cap(timer.label)} paused, with {left} left." if pause
                else f"{_cap(timer.label)} resumed: {left} left.")
        return self._say(text, change)

    def _adjust(self, timer: Timer, delta: float, ctx: SkillContext) -> SkillReply:
        timers, now = self._timers, ctx.monotonic
        left = max(0.0, timers.remaining(timer, now) + delta)

        def change() -> None:
            timers.adjust([timer.id], delta, now)

        if left <= 0:
            return self._say(f"That's all the time on the {timer.label}: it's done now.", change)
        done, where = ("Added", "to") if delta > 0 else ("Took", "off")
        return self._say(f"{done} {say_duration(abs(delta))} {where} the {timer.label}: "
                         f"{say_remaining(left)} left.", change)

    def _pick(self, target: Target, verb: str, now: float) -> Timer | str:
        """The one timer `target` means, or what to say instead: none running, or which?

        Several could be meant: the obvious one is taken (the only one running for
        "pause", the only paused one for "resume", the one just talked about), as Home
        Assistant does; otherwise the user is asked which."""
        everything = self._timers.active()
        chosen = matching([t for t in everything if t.kind == "timer"], target)
        if not chosen:
            return nothing_matches(target, everything)
        if len(chosen) > 1 and verb in ("pause", "resume"):
            chosen = [t for t in chosen if t.paused == (verb == "resume")] or chosen
        if len(chosen) > 1:
            chosen = [t for t in chosen if t.id in self._focus] or chosen
        names = told_apart(chosen, now)
        if len(chosen) == 1 or len(set(names)) == 1:
            return chosen[0]  # alike in every way the user could say: the first to ring
        return which_one(verb, names)


def _target(found: Recognised) -> Target | None:
    """Which timer a cancel, status or change means: by name or by its length (None: the
    reading makes no sense, "the {duration} timer" with no duration in it)."""
    name = found.text("name")
    seconds = slot_seconds(found, "start_")
    said = found.text("duration")
    if said and found.intent not in ("HassIncreaseTimer", "HassDecreaseTimer"):
        seconds = parse_duration(said)  # apace's "pause the {duration} timer"
        if seconds is None:
            return None
    if name is not None and (length := _duration_named(name)) is not None:
        name, seconds = None, length  # "the {name} timer" heard as "the 1 hour timer"
    return Target(kind="timer", name=name, seconds=seconds)


_LEADING = frozenset({"for", "a", "an", "the", "my"})


def _duration_named(name: str) -> float | None:
    """The length a {name} wildcard holds, if it is one: "1 hour", "for 2 hour" (from
    "continue for 2 hour timer", Whisper's "the" heard as "for")."""
    words = name.split()
    while words and words[0] in _LEADING:
        words = words[1:]
    return parse_duration(" ".join(words)) if words else None


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]
