"""Timers, alarms and reminders that really ring: a pure store and the skill that fills it.

`Timers` holds what is running, on the monotonic clock the pipeline uses, and does no I/O:
whoever rings them (the session) sleeps until `next_due()`, then speaks `ring_text` for
each of `pop_due(now)`. `TimerSkill` answers the spoken requests; the change it implies
(add, cancel) is its reply's `action`, run only when the turn is committed, while the words
are computed at match time from the store as it is then.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from pipeline.skills.base import SkillContext, SkillReply
from pipeline.skills.timer_phrases import (
    GATE,
    AskWhen,
    Cancel,
    Intent,
    ListTimers,
    Remaining,
    SetTimer,
    Target,
    parse,
    point_of_view,
    wake_misheard,
)
from pipeline.skills.timer_store import Kind, Timer, Timers
from pipeline.skills.when import fix_meridiem, next_occurrence, say_clock, say_day
from pipeline.skills.words import article_for, join_words, say_duration, say_remaining, to_digits


def ring_text(timer: Timer) -> str:
    """What to say when `timer` is due."""
    if timer.kind == "alarm":
        return f"It's {say_clock(timer.wall)}: your alarm."
    if timer.kind == "reminder":
        return f"Reminder: {timer.label}." if timer.label else "This is your reminder."
    return f"Your {timer.label} is done."


def timer_label(name: str | None, seconds: float) -> str:
    """ "pasta timer", "10 minute timer", "timer for a minute and a half"."""
    if name:
        return f"{name} timer"
    spoken = say_duration(seconds)
    count, _, unit = spoken.partition(" ")
    if count.isdigit() and unit.rstrip("s") in ("second", "minute", "hour"):
        return f"{count} {unit.rstrip('s')} timer"
    return f"timer for {spoken}"


def _describe(timer: Timer, now: float) -> str:
    """One running timer in a list: "the pasta timer with 3 minutes left"."""
    if timer.kind == "alarm":
        return f"an alarm for {say_clock(timer.wall)}"
    left = say_remaining(Timers.remaining(timer, now))
    if timer.kind == "reminder":
        return f"a reminder in {left}" + (f" to {timer.label}" if timer.label else "")
    return f"the {timer.label} with {left} left"


_ASK_WHEN = {
    "timer": "For how long? You can say, for example, set a timer for 10 minutes.",
    "alarm": "For what time? You can say, for example, set an alarm for 7 AM.",
    "reminder": "When should I remind you? You can say, for example, remind me in 10 minutes.",
}
_NOUNS = {None: "timers", "timer": "timers", "alarm": "alarms", "reminder": "reminders"}
_NONE_RUNNING = {
    None: "No timers are running.",
    "timer": "No timers are running.",
    "alarm": "You have no alarms set.",
    "reminder": "You have no reminders set.",
}


_ADVICE = ("Turn on Home Assistant's 'prefer handling commands locally' and ask again: it "
           "rings on your speaker.")
CANNOT_RING: dict[Kind, str] = {
    "timer": f"I can't ring a timer from here. {_ADVICE}",
    "alarm": f"I can't ring an alarm from here. {_ADVICE}",
    "reminder": f"I can't ring a reminder from here. {_ADVICE}",
}
"""What the skill says where its timers could not ring (Home Assistant's own timers ring
on the satellite; its pipeline asks them first with that setting on)."""


class TimerSkill:
    """Sets, reports and cancels timers, alarms and reminders in a `Timers` store."""

    name = "timer"

    def __init__(self, timers: Timers) -> None:
        self._timers = timers

    @property
    def timers(self) -> Timers:
        return self._timers

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        text = wake_misheard(text)
        if not GATE.search(text):
            return None
        intent = parse(fix_meridiem(to_digits(text)))
        return None if intent is None else self._reply(intent, ctx)

    def _reply(self, intent: Intent, ctx: SkillContext) -> SkillReply | None:
        if isinstance(intent, SetTimer):
            return self.start(intent, ctx)
        if isinstance(intent, ListTimers):
            return self._say(self._list(intent.kind, ctx))
        if isinstance(intent, Remaining):
            return self._say(self._remaining(intent.target, ctx),
                             found_nothing=misses(intent.target, self._timers.active()))
        if isinstance(intent, Cancel):
            return self.stop(intent.target, ctx)
        if isinstance(intent, AskWhen):
            return self._say(_ASK_WHEN[intent.kind])
        return None

    def _say(self, text: str, action: Callable[[], None] | None = None, *,
             found_nothing: bool = False) -> SkillReply:
        return SkillReply(text=text, skill=self.name, action=action, found_nothing=found_nothing)

    def start(self, req: SetTimer, ctx: SkillContext) -> SkillReply:
        """Set `req`'s timer, alarm or reminder (at commit)."""
        if not self._timers.rings:
            return self._say(CANNOT_RING[req.kind])
        if req.clock is not None:
            wall = next_occurrence(req.clock, ctx.now, prefer_morning=req.prefer_morning)
            seconds = wall.timestamp() - ctx.now.timestamp()
        else:
            seconds = req.seconds or 0.0
            wall = ctx.now + timedelta(seconds=seconds)
        due = ctx.monotonic + seconds
        if req.kind == "alarm":
            label, text = "alarm", f"Alarm set for {say_clock(wall)}{say_day(wall, ctx.now)}."
            if req.clock is None:
                text = f"Alarm set for {say_clock(wall)}, {say_duration(seconds)} from now."
        elif req.kind == "reminder":
            label = req.task
            when = (f"in {say_duration(seconds)}" if req.clock is None
                    else f"at {say_clock(wall)}{say_day(wall, ctx.now)}")
            what = f" {req.connector} {req.task}" if req.task else ""
            text = f"OK, {when} I'll remind you{what}."
        else:
            label = timer_label(req.name, seconds)
            text = _timer_set_text(req.name, seconds)
        kind, name, timers = req.kind, req.name, self._timers

        def begin() -> None:
            timers.add(kind, due, label, name, wall, duration_s=seconds)

        return self._say(text, begin)

    def _list(self, kind: Kind | None, ctx: SkillContext) -> str:
        running = [t for t in self._timers.active() if kind is None or t.kind == kind]
        if not running:
            return _NONE_RUNNING[kind]
        things = [_describe(t, ctx.monotonic) for t in running]
        if len(things) == 1:
            return f"You have {things[0]}."
        noun = _NOUNS[kind] if kind is not None else "things running"
        return f"You have {len(things)} {noun}: {join_words(things)}."

    def _remaining(self, target: Target, ctx: SkillContext) -> str:
        running = matching(self._timers.active(), target)
        if target.kind is None and target.name is None:
            # "how much time is left" asks about timers first, alarms only when no timer runs.
            running = [t for t in running if t.kind == "timer"] or running
        if not running:
            return nothing_matches(target, self._timers.active())
        return left_on_each(running, ctx)

    def stop(self, target: Target, ctx: SkillContext) -> SkillReply:
        """Cancel what `target` means (at commit); ask which when several could be meant."""
        everything = self._timers.active()
        chosen = matching(everything, target)
        if not chosen:
            return self._say(nothing_matches(target, everything),
                             found_nothing=misses(target, everything))
        names = told_apart(chosen, ctx.monotonic)
        if len(set(names)) == 1 and not target.every:
            chosen = chosen[:1]  # alike in every way the user could say: the first to ring
        if len(chosen) > 1 and not target.every and target.name is None:
            noun = _NOUNS[target.kind]
            return self._say(f"{which_one('cancel', names, noun)} Or say cancel all {noun}.")
        ids, timers = [t.id for t in chosen], self._timers
        if len(chosen) == 1:
            text = _cancelled_text(chosen[0])
        else:
            what = f"{target.name} {_NOUNS[target.kind]}" if target.name else _NOUNS[target.kind]
            text = f"Cancelled {len(chosen)} {what}."

        def end() -> None:
            timers.discard(ids)

        return self._say(text, end)


def _timer_set_text(name: str | None, seconds: float) -> str:
    if name:
        return f"{name[0].upper()}{name[1:]} timer set for {say_duration(seconds)}."
    label = timer_label(None, seconds)
    if label.startswith("timer for"):
        return f"OK, a {label}, starting now."
    return f"OK, {article_for(float(label.split()[0]))} {label}, starting now."


def matching(timers: list[Timer], target: Target) -> list[Timer]:
    """The running timers `target` means: by kind, then by name or by duration."""
    found = [t for t in timers if target.kind is None or t.kind == target.kind]
    if target.name is not None:
        names = {target.name, point_of_view(target.name)}
        found = [t for t in found if t.name in names or t.label in names
                 or any(n in t.label for n in names)]
    elif target.seconds is not None:
        # "the 10 minute timer" is the unnamed one if there is one, else any that long.
        found = [t for t in found if abs(t.duration_s - target.seconds) < 1.0]
        found = [t for t in found if t.name is None] or found
    return found


def misses(target: Target, running: list[Timer]) -> bool:
    """`target` names a timer (by name or length) that is not among those `running`, and
    some are: what a misheard name sounds like ("cancel might be the timer")."""
    named = target.name is not None or target.seconds is not None
    return named and bool(running) and not matching(running, target)


def nothing_matches(target: Target, running: list[Timer]) -> str:
    kind = target.kind or "timer"
    if target.name is not None and running:
        return f"There's no {target.name} {kind} running."
    if target.seconds is not None and running:
        return f"There's no {timer_label(None, target.seconds)} running."
    return _NONE_RUNNING[target.kind]


_NAMED_AT_MOST = 3
"""A question or an answer names at most this many timers: a spoken list of five is lost."""


def told_apart(timers: list[Timer], now: float) -> list[str]:
    """How to name each of `timers` in a question: "the pasta timer", and where two share a
    label, by their time left ("the 30 minute timer with 12 minutes left")."""
    labels = [t.label for t in timers]
    return [_describe(t, now) if t.kind != "timer" or labels.count(t.label) > 1
            else f"the {t.label}" for t in timers]


def which_one(verb: str, things: list[str], noun: str = "timers") -> str:
    """One short question: "Which one should I pause: the eggs timer or the pizza timer?"
    (more than three: the first three "or another")."""
    things = list(dict.fromkeys(things))
    if len(things) <= _NAMED_AT_MOST:
        return f"Which one should I {verb}: {join_words(things, last='or')}?"
    named = ", ".join(things[:_NAMED_AT_MOST])
    return f"Which of your {len(things)} {noun} should I {verb}: {named} or another?"


def left_on_each(timers: list[Timer], ctx: SkillContext) -> str:
    """The time left on each of `timers`; on more than two, how many and the next to ring
    (a sentence per timer is too long to listen to)."""
    if len(timers) <= 2:
        return " ".join(left_on(t, ctx) for t in timers)
    kinds = {t.kind for t in timers}
    noun = _NOUNS[kinds.pop()] if len(kinds) == 1 else "timers and alarms"
    ticking = [t for t in timers if not t.paused] or timers
    soonest = min(ticking, key=lambda t: Timers.remaining(t, ctx.monotonic))
    first = left_on(soonest, ctx)
    return f"You have {len(timers)} {noun} running. Next: {first[:1].lower()}{first[1:]}"


def left_on(timer: Timer, ctx: SkillContext) -> str:
    """ "About 3 minutes and 20 seconds left on the pasta timer." (no "about" under a minute)"""
    left = Timers.remaining(timer, ctx.monotonic)
    about = "About " if left >= 60 else ""
    spoken = say_remaining(left)
    if timer.kind == "alarm":
        return f"Your alarm for {say_clock(timer.wall)} goes off in {about.lower()}{spoken}."
    if timer.kind == "reminder":
        what = f" to {timer.label}" if timer.label else ""
        return f"Your reminder{what} is in {about.lower()}{spoken}."
    if timer.paused:
        return f"The {timer.label} is paused with {spoken} left."
    text = f"{about}{spoken} left on the {timer.label}."
    return text[0].upper() + text[1:]


def _cancelled_text(timer: Timer) -> str:
    if timer.kind == "alarm":
        return f"Your alarm for {say_clock(timer.wall)} is cancelled."
    if timer.kind == "reminder":
        return "Reminder cancelled." if not timer.label else f"Cancelled the reminder to {timer.label}."
    text = f"{timer.label} cancelled."
    return text[0].upper() + text[1:]
