"""The latency levers, each declared once: its flag, its help, the option it sets and its
name in `apace bench --ablate`.

`serve`, `talk`, `wyoming` and `cluster serve` register the flags from `LEVERS`
(`add_flags`), `settings_from` applies them (`apply`), `apace bench --ablate` runs each
lever off (`ablations`), and the lever table in docs/latency.md is `readme_table()` (a unit test keeps them
equal). A new lever is the option it sets (and its use), one entry here, and that table
made again (`python -m app.levers`).

An option is named by its path in `app.runtime.Settings`, e.g. `conversation.speculate`.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from models.turn_detector import PLAIN, PLAIN_THRESHOLDS
from pipeline.listen.vad import VadOptions

T = TypeVar("T")
GROUP = ("latency levers (the --no-/--fixed-/--sentence- flags and a 30 s --asr-window turn"
         " one off, to measure; --prompt-lookup and --draft-model add one)")


@dataclass(frozen=True, kw_only=True)
class Switch:
    """A flag without a value: given, it sets each option in `sets`."""

    name: str
    """Its name in the bench (`no-NAME` when ablated) and in the docs' lever table."""
    flag: str
    help: str
    sets: Mapping[str, object]
    """Option path → the value the flag gives it."""
    ablate: bool = True
    """`apace bench --ablate` runs it off (the flag given)."""

    def add_to(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument(self.flag, action="store_true", help=self.help)

    def changes(self, args: argparse.Namespace) -> dict[str, object]:
        return dict(self.sets) if getattr(args, _dest(self.flag)) else {}

    @property
    def usage(self) -> str:
        return self.flag

    @property
    def off(self) -> list[str] | None:
        """The flags that turn it off in `apace bench --ablate` (None: not ablated)."""
        return [self.flag] if self.ablate else None


@dataclass(frozen=True, kw_only=True)
class Setting:
    """A flag with a value that goes to one option (`convert`ed); absent (None), the
    option keeps its default."""

    name: str
    flag: str
    help: str
    sets: str
    """The option path the (converted) value goes to."""
    metavar: str
    type: Callable[[str], Any] = str
    default: object = None
    convert: Callable[[Any], object] = lambda value: value
    off_value: str | None = None
    """The value that turns it off in `apace bench --ablate` (None: not ablated)."""

    def add_to(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument(self.flag, type=self.type, metavar=self.metavar, default=self.default,
                           help=self.help)

    def changes(self, args: argparse.Namespace) -> dict[str, object]:
        value = getattr(args, _dest(self.flag))
        return {} if value is None else {self.sets: self.convert(value)}

    @property
    def usage(self) -> str:
        return f"{self.flag} {self.metavar}"

    @property
    def off(self) -> list[str] | None:
        return None if self.off_value is None else [self.flag, self.off_value]


Lever = Switch | Setting

LEVERS: tuple[Lever, ...] = (
    Setting(name="speech-floor", flag="--vad-floor-db", metavar="DB", type=float,
            default=VadOptions().speech_floor_db, sets="conversation.vad.speech_floor_db",
            off_value="0",
            help="voice this far below the utterance's level is silence: ends speech where it"
            " fades, not after webrtcvad's hangover (0: off; default %(default)s)"),
    Switch(name="speculation", flag="--no-speculate", sets={"conversation.speculate": False},
           help="wait for the endpoint before starting the reply"),
    Switch(name="adaptive-endpoint", flag="--fixed-endpoint", sets={"conversation.endpoint": None},
           help="always wait --endpoint-ms of silence (no adaptive endpointing)"),
    Switch(name="early-verdict", flag="--late-verdict",
           sets={"conversation.early_verdict": False},
           help="the turn detector judges a turn once the reply's first clause is written,"
           " not before the LLM reads it (a later endpoint)"),
    Switch(name="turn-detector", flag="--no-turn-detector", sets={"engine.turn_detector": False},
           help="end turns on punctuation alone (no end-of-turn model)"),
    Switch(name="turn-stops", flag="--plain-turn-detector", ablate=False,
           sets={"engine.turn_prompt": PLAIN,  # lower bound first: each step is validated
                 "conversation.endpoint.unfinished_logprob": PLAIN_THRESHOLDS[1],
                 "conversation.endpoint.done_logprob": PLAIN_THRESHOLDS[0]},
           help="the turn detector scores log P(end of message) alone, not mixed with that"
           " of a sentence stop (docs/turn_detector.md)"),
    Setting(name="asr-window", flag="--asr-window", metavar="S", type=int, sets="asr.windows_s",
            convert=lambda seconds: (seconds,), off_value="30",
            help="one fixed Whisper window in seconds (30 = faster-whisper's own)"),
    Switch(name="kv-reuse", flag="--no-kv-reuse", sets={"llm.reuse_kv": False},
           help="re-read the whole prompt every turn"),
    Switch(name="first-clause", flag="--sentence-clauses",
           sets={"conversation.clauses.early_first_clause": False},
           help="speak whole sentences only (no early first clause)"),
    Setting(name="first-clause-words", flag="--first-clause-words", metavar="N", type=int,
            sets="conversation.clauses.first_clause_max_words",
            help="with no comma by N words, the first clause is cut before a linking word"
            " with 3 words before it (default 4)"),
    Setting(name="first-clause-cap", flag="--first-clause-cap", metavar="N", type=int,
            sets="conversation.clauses.first_clause_cap_words",
            help="with neither a comma nor a linking word, the first clause is cut before"
            " word N+1 as it is written (default 0: off)"),
    Switch(name="llm-lockstep", flag="--no-llm-lockstep",
           sets={"conversation.clauses.lockstep": False},
           help="the LLM decodes ahead of the reply before its first clause (a step is under"
           " way when clause 1's audio is asked for)"),
    Switch(name="drafts", flag="--no-drafts", sets={"llm.drafts": False, "engine.reply_cache": False},
           help="no draft-and-verify decoding (and no reply cache)"),
    Switch(name="prompt-lookup", flag="--prompt-lookup", sets={"llm.prompt_lookup": True},
           ablate=False, help="add prompt-lookup drafts (slower for chat on CPU)"),
    Setting(name="draft-model", flag="--draft-model", metavar="GGUF", sets="llm.draft_model",
            help="a smaller model with the LLM's vocabulary drafts every reply"),
    Switch(name="hear-unsure", flag="--no-hear-unsure", sets={"conversation.hear_unsure": False},
           ablate=False, help="a turn the turn detector is unsure of is not heard again by the"
           " second ear before the LLM reads it"),
    Switch(name="llm-tools", flag="--no-llm-tools", sets={"llm.tools": False}, ablate=False,
           help="do not offer the skills to the LLM as tools (the skills still answer what"
           " they recognise; the LLM only talks)"),
    Switch(name="tts-cache", flag="--no-tts-cache", sets={"engine.tts_cache": False}, ablate=False,
           help="synthesize a clause again even when it was spoken before (no audio cache)"),
    Switch(name="tts-stream", flag="--no-tts-stream", sets={"tts.stream": False},
           help="Piper synthesizes each sentence whole (no audio while it decodes)"),
    Switch(name="shared-llm", flag="--no-shared-llm", sets={"engine.shared_llm": False},
           ablate=False, help="a llama context per conversation instead of one shared, batched"
           " context (a --draft-model always gets its own)"),
    Switch(name="light-tier", flag="--no-light-tier", sets={"engine.light_tier": False},
           ablate=False, help="under load, no reply is written by the light tier (SmolLM2-135M):"
           " every one waits for the shared LLM"),
    Switch(name="cpu-turns", flag="--no-cpu-turns", sets={"engine.share_cpu": False},
           help="let ASR, LLM and TTS compute at the same time"),
    Switch(name="captions", flag="--no-captions", sets={"conversation.partial_interval_s": None},
           help="no live partial transcripts while the user speaks"),
    Switch(name="degrade", flag="--no-degrade", sets={"conversation.degrade.enabled": False},
           ablate=False, help="under load, give up nothing on purpose: speculate, answer in"
           " full and never say \"One moment.\" (replies queue instead; docs/scaling.md)"),
    Switch(name="caption-prefill", flag="--no-caption-prefill",
           sets={"conversation.prefill_captions": False},
           help="the LLM and turn detector do not read the live caption's words ahead"),
)


def add_flags(parser: argparse.ArgumentParser, table: Sequence[Lever] | None = None) -> None:
    """Every lever's flag, in one argument group of `parser`."""
    group = parser.add_argument_group(GROUP)
    for lever in _levers(table):
        lever.add_to(group)


def apply(settings: T, args: argparse.Namespace, table: Sequence[Lever] | None = None) -> T:
    """`settings` with the lever flags in `args` applied; a value the options refuse raises
    ValueError naming the flag."""
    for lever in _levers(table):
        for path, value in lever.changes(args).items():
            try:
                settings = set_option(settings, path, value)
            except ValueError as error:
                raise ValueError(f"{error} (check {lever.flag})") from None
    return settings


def set_option(options: T, path: str, value: object) -> T:
    """A copy of the frozen dataclass `options` with the option at `path` (dotted) set;
    each dataclass on the way validates itself again."""
    if options is None:  # under an option another flag turned off (--fixed-endpoint)
        return options
    head, _, rest = path.partition(".")
    inner = set_option(getattr(options, head), rest, value) if rest else value
    result: T = dataclasses.replace(options, **{head: inner})  # type: ignore[type-var]
    return result


def ablations(table: Sequence[Lever] | None = None) -> list[tuple[str, list[str]]]:
    """`apace bench --ablate`'s configurations: every lever off at once, then each alone."""
    each: list[tuple[str, list[str]]] = []
    for lever in _levers(table):
        if (off := lever.off) is not None:
            each.append((f"no-{lever.name}", off))
    return [("all-off", [flag for _, flags in each for flag in flags]), *each]


def readme_table(table: Sequence[Lever] | None = None) -> str:
    """The lever table of docs/latency.md (markdown)."""
    rows = ["| lever | flag | what the flag does | `apace bench --ablate` |", "|---|---|---|---|"]
    for lever in _levers(table):
        text = lever.help.replace("%(default)s", str(getattr(lever, "default", None)))
        off = lever.off
        bench = "—" if off is None else f"`no-{lever.name}`" + (
            f" (`{' '.join(off)}`)" if len(off) > 1 else "")
        rows.append(f"| {lever.name} | `{lever.usage}` | {text} | {bench} |")
    return "\n".join(rows) + "\n"


def _levers(table: Sequence[Lever] | None) -> Sequence[Lever]:
    return LEVERS if table is None else table  # read at call time: tests swap LEVERS


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


if __name__ == "__main__":
    print(readme_table(), end="")
