"""Degrading on purpose under load: what a turn gives up so that nobody's reply queues.

Several conversations share one LLM (pipeline.compute.batching). When more of them need it
at once than the box can serve within the objective, something gives. Left alone, what
gives is every reply's delay (measured with three sessions: pooled TTFA p95 5.3 s, one
turn 6.3 s). This module decides instead, per turn, from a snapshot of the load (`Load`):

- `no-speculation`: while another session's *confirmed* reply is queued for or using the
  LLM, a session does not start a *speculative* LLM pass at its silence onset; its ASR
  still runs (so a skill still answers at once) and its LLM starts at the endpoint, if
  the turn is confirmed. A guess must not slow someone's committed answer.
- `short`: while other confirmed replies are in flight, a confirmed LLM reply is capped
  at one sentence (and `short_words` words): the LLM is freed sooner for the others.
- `light-tier`: while other confirmed replies are in flight, a confirmed LLM reply is
  written by the engine's light tier (the embedded SmolLM2-135M: ~3x faster a token,
  its own KV) instead of queueing behind them for the shared LLM — when the engine has
  one (`LoadBoard.light`). It knows other things (docs/llm-choice.md: more of 60 general
  questions, fewer numbers, no tools), but a late answer is no answer: three sessions at
  once waited 2.3 s median, 8.5 s p95 for the shared 0.5B's first audio.
- `one-moment`: the last resort. When the LLM wait predicted for a confirmed turn exceeds
  `one_moment_after_s`, an honest "One moment." is spoken first — once per turn, never
  for a skill's turn (a skill answers without the LLM, so it never waits for it).

The prediction (`predicted_wait_s`): each confirmed reply ahead of ours and ours cost
`reply_s` of LLM time to a first token (a prior, then measured: a confirmed reply's wait
divided by the replies it shared the LLM with), and we wait at least as long as the
oldest reply still waiting for its first token has. Crude, but it errs towards silence:
"One moment." is said only when several replies are already waiting.

`LoadBoard` is the engine's view: every running conversation joins it and says, when
asked (`LlmUser.llm_use`), whether its reply is using the LLM; `decide` takes the snapshot
for one of them (the others) and applies the rules. `DegradeOptions(enabled=False)`
(`--no-degrade`) turns it all off, for A/B.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol


class Degradation(StrEnum):
    NO_SPECULATION = "no-speculation"
    SHORT = "short"
    LIGHT = "light-tier"
    ONE_MOMENT = "one-moment"


ONE_MOMENT_TEXT = "One moment."


@dataclass(frozen=True, kw_only=True)
class DegradeOptions:
    enabled: bool = True
    """False: no turn is ever degraded (the A/B switch, `--no-degrade`)."""
    speculate_below: int = 1
    """Other sessions' confirmed LLM replies in flight from which no speculative LLM pass
    starts (1: any)."""
    short_from: int = 1
    """Other sessions' confirmed LLM replies in flight from which a confirmed reply is short."""
    light_from: int = 1
    """Other sessions' confirmed LLM replies in flight from which a confirmed reply is the
    light tier's, where the engine has one."""
    short_sentences: int = 1
    """A short reply's sentences."""
    short_words: int = 20
    """A short reply's words (checked at a sentence's end)."""
    one_moment_after_s: float = 1.5
    """Predicted LLM wait beyond which "One moment." is said first (math.inf: never)."""
    reply_s: float = 0.6
    """LLM time to a confirmed reply's first token, per reply sharing the LLM, until the
    server has seen some (docs/scaling.md)."""
    smoothing: float = 0.3
    """Weight of each newly seen cost in its running average (exponential)."""

    def __post_init__(self) -> None:
        if self.speculate_below < 1 or self.short_from < 1 or self.light_from < 1:
            raise ValueError("speculate_below, short_from and light_from must be >= 1")
        if self.short_sentences < 1 or self.short_words < 1:
            raise ValueError("short_sentences and short_words must be >= 1")
        if self.one_moment_after_s <= 0 or self.reply_s <= 0:
            raise ValueError("one_moment_after_s and reply_s must be > 0")
        if not 0 < self.smoothing <= 1:
            raise ValueError(f"smoothing must be in (0, 1], got {self.smoothing}")


@dataclass(frozen=True)
class Load:
    """What the other sessions ask of the LLM now."""

    others_confirmed: int = 0
    """Other sessions whose confirmed reply is queued for or using the LLM."""
    oldest_wait_s: float = 0.0
    """How long the oldest of those still without a first token has waited (0: none)."""
    reply_s: float | None = None
    """Measured LLM time to a first token per reply sharing it (None: not yet)."""


@dataclass(frozen=True)
class Plan:
    """What a turn gives up, and the caps a short reply gets."""

    tags: frozenset[Degradation] = frozenset()
    sentences: int | None = None
    """The reply's sentence cap (None: its own budget)."""
    words: int | None = None
    load: Load = field(default_factory=Load)


def predicted_wait_s(load: Load, options: DegradeOptions) -> float:
    """The LLM wait a confirmed reply asking now may expect (see the module's doc)."""
    cost = load.reply_s if load.reply_s is not None else options.reply_s
    return max(cost * (load.others_confirmed + 1), load.oldest_wait_s + cost)


def decide(load: Load, options: DegradeOptions, *, speculative: bool,
           light: bool = False) -> Plan:
    """The degradations of an LLM reply asking now: a speculative pass (may it start?)
    or a confirmed reply (short? the light tier's, if there is one (`light`)? "One
    moment." first?). A skill's turn never asks."""
    if not options.enabled:
        return Plan(load=load)
    if speculative:
        held = load.others_confirmed >= options.speculate_below
        return Plan(frozenset({Degradation.NO_SPECULATION}) if held else frozenset(), load=load)
    tags: set[Degradation] = set()
    if load.others_confirmed >= options.short_from:
        tags.add(Degradation.SHORT)
    if light and load.others_confirmed >= options.light_from:
        tags.add(Degradation.LIGHT)  # it waits for no one: nothing to say "One moment." for
    elif predicted_wait_s(load, options) > options.one_moment_after_s:
        tags.add(Degradation.ONE_MOMENT)
    short = Degradation.SHORT in tags
    return Plan(frozenset(tags), options.short_sentences if short else None,
                options.short_words if short else None, load)


@dataclass(frozen=True)
class LlmUse:
    """One session's reply as the LLM sees it."""

    confirmed: bool
    asked_at: float
    """When the reply asked the LLM (monotonic seconds, pipeline.timeline.now)."""
    first_token: bool
    """It has had its first token (it is decoding, no longer waiting)."""


class LlmUser(Protocol):
    def llm_use(self) -> LlmUse | None:
        """Its reply's use of the LLM now (None: none queued or decoding)."""


class LoadBoard:
    """Every running conversation of an engine, asked for the load a turn's decision
    reads (on the event loop only)."""

    def __init__(self, options: DegradeOptions | None = None) -> None:
        self.options = options or DegradeOptions()
        self.light = False
        """The engine has a light tier a confirmed reply may use under load."""
        self._users: list[LlmUser] = []
        self._reply_s: float | None = None

    def join(self, user: LlmUser) -> None:
        self._users.append(user)

    def leave(self, user: LlmUser) -> None:
        if user in self._users:
            self._users.remove(user)

    def others(self, user: LlmUser) -> int:
        """How many other conversations are open beside `user`."""
        return sum(1 for other in self._users if other is not user)

    def load(self, excluding: LlmUser, t: float) -> Load:
        """What every session but `excluding` asks of the LLM at `t`."""
        uses = [use for user in self._users if user is not excluding
                and (use := user.llm_use()) is not None and use.confirmed]
        waiting = [t - use.asked_at for use in uses if not use.first_token]
        return Load(len(uses), max(waiting, default=0.0), self._reply_s)

    def decide(self, user: LlmUser, t: float, *, speculative: bool) -> Plan:
        return decide(self.load(user, t), self.options, speculative=speculative,
                      light=self.light)

    def measured(self, wait_s: float, others: int) -> None:
        """A confirmed reply waited `wait_s` for its first token, asked while `others`
        confirmed replies were in flight: the cost per reply sharing the LLM."""
        cost = wait_s / (others + 1)
        alpha = self.options.smoothing
        self._reply_s = cost if self._reply_s is None else (
            alpha * cost + (1 - alpha) * self._reply_s)
