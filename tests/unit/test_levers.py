"""The lever table (app/levers.py) drives the CLI's flags, the Settings they make, the
bench's ablations and the lever table in docs/latency.md."""

from __future__ import annotations

import argparse
import functools
import re
from pathlib import Path
from typing import Any

import pytest

from app import levers
from app.cli import _parser
from app.cli.engine import settings_from
from app.cli.errors import UsageError
from app.levers import LEVERS, Lever, Setting, Switch
from app.runtime import EngineOptions, Settings

LEVER_DOC = Path(__file__).resolve().parents[2] / "docs" / "latency.md"
SAMPLE = {"--draft-model": "draft.gguf", "--first-clause-words": "5",  # values for settings
          "--first-clause-cap": "4"}
# the bench does not ablate


def _argv(lever: Lever) -> list[str]:
    if isinstance(lever, Switch):
        return [lever.flag]
    return [lever.flag, lever.off_value or SAMPLE[lever.flag]]


def _option(settings: Any, path: str) -> Any:
    return functools.reduce(getattr, path.split("."), settings)


COMMANDS = {"talk": ["talk", "q.wav"], "serve": ["serve"], "wyoming": ["wyoming"],
            "cluster": ["cluster", "serve"]}


def _settings(command: str, *flags: str) -> Any:
    return settings_from(_parser().parse_args([*COMMANDS[command], *flags]))


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("lever", LEVERS, ids=lambda lever: lever.name)
def test_each_lever_flag_parses_and_sets_its_options(lever: Lever, command: str) -> None:
    args = _parser().parse_args([*COMMANDS[command], *_argv(lever)])
    changes = lever.changes(args)
    assert changes, f"{lever.flag} given but changes nothing"
    settings, default = settings_from(args), _settings(command)
    for path, value in changes.items():
        assert _option(settings, path) == value
        assert _option(default, path) != value, f"{path} is already {value!r} without {lever.flag}"


# What each lever's flag meant before the table existed (app/cli/__init__.py, 4ac3a52).
BEFORE: dict[tuple[str, ...], dict[str, object]] = {
    ("--vad-floor-db", "0"): {"conversation.vad.speech_floor_db": 0.0},
    ("--no-speculate",): {"conversation.speculate": False},
    ("--fixed-endpoint",): {"conversation.endpoint": None},
    ("--late-verdict",): {"conversation.early_verdict": False},
    ("--no-turn-detector",): {"engine.turn_detector": False},
    ("--asr-window", "30"): {"asr.windows_s": (30,)},
    ("--no-kv-reuse",): {"llm.reuse_kv": False},
    ("--sentence-clauses",): {"conversation.clauses.early_first_clause": False},
    ("--no-drafts",): {"llm.drafts": False, "engine.reply_cache": False},
    ("--prompt-lookup",): {"llm.prompt_lookup": True},
    ("--draft-model", "d.gguf"): {"llm.draft_model": "d.gguf"},
    ("--no-tts-cache",): {"engine.tts_cache": False},
    ("--no-tts-stream",): {"tts.stream": False},
    ("--no-shared-llm",): {"engine.shared_llm": False},
    ("--no-cpu-turns",): {"engine.share_cpu": False},
    ("--no-captions",): {"conversation.partial_interval_s": None},
    ("--no-caption-prefill",): {"conversation.prefill_captions": False},
}


@pytest.mark.parametrize(("flags", "expected"), BEFORE.items(), ids=lambda x: str(x))
def test_each_lever_flag_means_what_it_meant_before_the_table(
        flags: tuple[str, ...], expected: dict[str, object]) -> None:
    settings = _settings("talk", *flags)
    assert {path: _option(settings, path) for path in expected} == expected


def test_without_lever_flags_the_settings_are_the_defaults_but_the_threads() -> None:
    settings = _settings("serve")
    assert settings.engine == EngineOptions()
    for part in ("asr", "tts", "conversation"):
        assert getattr(settings, part) == getattr(Settings(), part)


ABLATED_BEFORE = {  # app/bench/latency.py's LEVERS before the table (4ac3a52)
    "speech-floor": ["--vad-floor-db", "0"],
    "speculation": ["--no-speculate"],
    "adaptive-endpoint": ["--fixed-endpoint"],
    "turn-detector": ["--no-turn-detector"],
    "asr-window": ["--asr-window", "30"],
    "kv-reuse": ["--no-kv-reuse"],
    "first-clause": ["--sentence-clauses"],
    "tts-stream": ["--no-tts-stream"],
    "llm-lockstep": ["--no-llm-lockstep"],
    "drafts": ["--no-drafts"],
    "captions": ["--no-captions"],
    "caption-prefill": ["--no-caption-prefill"],
    "cpu-turns": ["--no-cpu-turns"],
    "early-verdict": ["--late-verdict"],
}


def test_ablate_runs_all_off_then_each_ablated_lever_off_from_the_table() -> None:
    configs = levers.ablations()
    assert configs[0][0] == "all-off"
    assert configs[1:] == [(f"no-{lever.name}", lever.off) for lever in LEVERS
                           if lever.off is not None]
    assert dict(configs[1:]) == {f"no-{name}": flags for name, flags in ABLATED_BEFORE.items()}
    assert configs[0][1] == [flag for _, flags in configs[1:] for flag in flags]


@pytest.mark.parametrize(("name", "flags"), levers.ablations(), ids=lambda x: str(x))
def test_each_ablation_is_a_valid_serve_command_line(name: str, flags: list[str]) -> None:
    assert _settings("serve", *flags) != _settings("serve"), name


def test_a_table_of_one_lever_gives_one_ablation() -> None:
    one = [lever for lever in LEVERS if lever.name == "asr-window"]
    assert levers.ablations(one) == [("all-off", ["--asr-window", "30"]),
                                     ("no-asr-window", ["--asr-window", "30"])]


def test_the_table_registers_each_flag_once_in_the_levers_group() -> None:
    parser = argparse.ArgumentParser()
    levers.add_flags(parser)
    group = next(g for g in parser._action_groups if g.title == levers.GROUP)
    assert [a.option_strings for a in group._group_actions] == [[lv.flag] for lv in LEVERS]
    assert len({lever.name for lever in LEVERS}) == len(LEVERS)


@pytest.mark.parametrize(("flags", "named"), [
    (["--asr-window", "0"], "--asr-window"),
    (["--asr-window", "31"], "--asr-window"),
    (["--vad-floor-db", "100"], "--vad-floor-db"),
    (["--llm-sequences", "0"], "--llm-sequences"),
    (["--llm-sequences", "64"], "--llm-sequences"),
    (["--endpoint-ms", "30"], "--endpoint-ms"),
    (["--max-sentences", "0"], "--max-sentences"),
    (["--caption-interval", "0"], "--caption-interval"),
    (["--threads", "-1"], "--threads"),
])
def test_a_bad_value_is_a_usage_error_naming_its_flag(flags: list[str], named: str) -> None:
    with pytest.raises(UsageError, match=re.escape(named)):
        _settings("talk", *flags)


def test_engine_options_refuse_what_the_engine_cannot_build() -> None:
    with pytest.raises(ValueError, match="llm_sequences"):
        EngineOptions(llm_sequences=0)
    with pytest.raises(ValueError, match="denoiser"):
        EngineOptions(denoiser="off")


def test_setting_a_nested_option_copies_and_validates_each_level() -> None:
    settings = Settings()
    changed = levers.set_option(settings, "conversation.vad.speech_floor_db", 0.0)
    assert changed.conversation.vad.speech_floor_db == 0.0
    assert settings.conversation.vad.speech_floor_db != 0.0  # frozen: a copy
    with pytest.raises(ValueError, match="speech_floor_db"):
        levers.set_option(settings, "conversation.vad.speech_floor_db", 91.0)


def _doc_levers() -> str:
    text = LEVER_DOC.read_text()
    start = text.index("<!-- levers:")
    start = text.index("\n", start) + 1
    return text[start:text.index("<!-- /levers -->", start)]


def test_every_lever_is_in_the_docs_table_and_every_row_is_a_lever() -> None:
    rows = [line for line in _doc_levers().splitlines() if line.startswith("| ")][1:]
    assert [row.split("|")[1].strip() for row in rows] == [lever.name for lever in LEVERS]
    flags = {re.match(r"`(--[\w-]+)", row.split("|")[2].strip()).group(1)  # type: ignore[union-attr]
             for row in rows}
    assert flags == {lever.flag for lever in LEVERS}


def test_the_docs_lever_table_is_the_one_the_table_makes() -> None:
    assert _doc_levers() == levers.readme_table(), (
        "docs/latency.md's lever table is out of date: paste `python -m app.levers` between its"
        " <!-- levers --> markers")


def test_a_setting_without_its_flag_leaves_the_option_alone() -> None:
    window = next(lever for lever in LEVERS if lever.name == "asr-window")
    assert isinstance(window, Setting)
    assert window.changes(_parser().parse_args(["serve"])) == {}


def test_the_plain_turn_detector_brings_its_own_thresholds_and_leaves_a_fixed_endpoint_alone(
) -> None:
    from models.turn_detector import PLAIN

    plain = _settings("serve", "--plain-turn-detector")
    assert plain.engine.turn_prompt == PLAIN
    assert (plain.conversation.endpoint.done_logprob,
            plain.conversation.endpoint.unfinished_logprob) == (-11.0, -15.0)
    fixed = _settings("serve", "--fixed-endpoint", "--plain-turn-detector")
    assert fixed.conversation.endpoint is None and fixed.engine.turn_prompt == PLAIN
