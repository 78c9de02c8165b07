"""The bench's held-out questions stay blind: other voices speak them, and a third set comes
from Home Assistant's templates, drawn once by a seeded generator, scored and shown apart."""

from __future__ import annotations

import importlib.util
import itertools
import re
import shutil
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from app.bench import quality
from app.bench.conversations import BLIND, ConversationSpec, conversation_set, parse_conversations
from app.bench.quality_report import QualityResult, TurnOutcome, report, summarise, table
from app.bench.voices import (
    HELD_OUT_VOICES,
    LEAD_S,
    PIPER,
    TRAIL_S,
    Voice,
    espeak_speech,
    make_utterances,
    utterance_key,
    voice_for,
)
from pipeline.audio import speech_end_sample
from pipeline.events import Pcm
from pipeline.quality import RuleError, TurnScore, normalise

HAS_HASSIL = all(importlib.util.find_spec(m) for m in ("hassil", "home_assistant_intents"))
needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None,
                                  reason="espeak-ng is not installed")


# ---- voices ----------------------------------------------------------------------------


def test_tuned_turns_keep_the_piper_voice_and_held_out_turns_rotate_through_others() -> None:
    shipped = conversation_set()
    tuned = [c for c in shipped if not c.held_out]
    assert tuned and all(voice_for(c, i) == PIPER for c in tuned for i in range(len(c.turns)))
    held = [c for c in shipped if c.held_out]
    voices = [[voice_for(c, i) for i in range(len(c.turns))] for c in held]
    assert all(v in HELD_OUT_VOICES and v != PIPER for vs in voices for v in vs)
    # Turn by turn the voice changes, and every voice of the rotation is heard.
    assert all(a != b for vs in voices for a, b in itertools.pairwise(vs))
    assert {v for vs in voices for v in vs} == set(HELD_OUT_VOICES)
    assert any(v.espeak for v in HELD_OUT_VOICES) and any(v.length_scale for v in HELD_OUT_VOICES)


def test_a_turns_voice_is_the_same_in_every_run_and_with_only() -> None:
    name = next(c.name for c in conversation_set() if c.blind)
    alone = conversation_set([name])[0]
    again = next(c for c in conversation_set() if c.name == name)
    assert [voice_for(alone, i) for i in range(len(alone.turns))] \
        == [voice_for(again, i) for i in range(len(again.turns))]
    # The rotation's start comes from the name (crc32), not from where the conversation sits.
    assert voice_for(alone, 0) == HELD_OUT_VOICES[zlib.crc32(name.encode()) % len(HELD_OUT_VOICES)]


class _FakePiper:
    voice_id = "fake"

    def __init__(self, voice: Voice) -> None:
        self.voice = voice

    def synthesize(self, text: str) -> Iterator[Pcm]:
        yield np.full(1600, 1000, np.int16)


def _two_conversations() -> list[ConversationSpec]:
    text = """
[[conversation]]
name = "t"
[[conversation.turn]]
say = "What is two plus two?"
accept = ['4']
[[conversation]]
name = "h"
held_out = true
""" + "".join(f'[[conversation.turn]]\nsay = "Question {n}."\nrefusal = false\n' for n in range(7))
    return parse_conversations(text, "x.toml")


def test_without_espeak_held_out_turns_fall_back_to_piper_and_say_so(
        capsys: pytest.CaptureFixture[str]) -> None:
    conversations = _two_conversations()
    made: list[Voice] = []

    def piper(voice: Voice) -> _FakePiper:
        made.append(voice)
        return _FakePiper(voice)

    utterances = make_utterances(conversations, piper=piper, espeak=False)
    tuned = utterances["What is two plus two?"]
    assert tuned.voice == PIPER.name and not tuned.held_out
    held = conversations[1]
    spoken = [utterances[utterance_key(t.say, voice_for(held, i))] for i, t in enumerate(held.turns)]
    assert all(u.held_out for u in spoken)
    fallbacks = [u.voice for u in spoken if "instead of" in u.voice]
    assert len(fallbacks) == sum(v.espeak is not None for v in HELD_OUT_VOICES)
    assert all(v.startswith("piper x1 (instead of espeak ") for v in fallbacks)
    assert {u.voice for u in spoken} - set(fallbacks) == {"piper x0.85", "piper x1.15"}
    # One synthesizer per Piper speed, loaded once each.
    assert sorted(str(v.length_scale) for v in made) == ["0.85", "1.15", "None"]
    assert "espeak-ng is not installed: 5 held-out questions" in capsys.readouterr().out
    for u in spoken:  # the same padding as every bench question
        assert not u.pcm[: int(LEAD_S * 16000)].any() and not u.pcm[-int(TRAIL_S * 16000):].any()


@needs_espeak
def test_an_espeak_question_is_16_khz_int16_with_the_benchs_silence_around_it() -> None:
    voice = Voice(name="espeak en-gb", espeak="en-gb")
    text = "Set a timer for five minutes."
    pcm = espeak_speech(text, voice)
    assert pcm.dtype == np.int16 and pcm.ndim == 1
    loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > 300)
    assert LEAD_S <= loud[0] / 16000 <= LEAD_S + 0.02
    assert TRAIL_S <= (len(pcm) - speech_end_sample(pcm)) / 16000 <= TRAIL_S + 0.02
    # Resampled, not relabelled: the speech lasts as long as espeak-ng's own 22.05 kHz.
    raw = subprocess.run(["espeak-ng", "-v", "en-gb", "-s", "175", "--stdout", text],
                         capture_output=True, check=True).stdout
    native = np.frombuffer(raw[44:], np.int16)
    native_loud = np.flatnonzero(np.abs(native.astype(np.int32)) > 300)
    native_s = (native_loud[-1] - native_loud[0]) / 22050
    assert abs((loud[-1] - loud[0]) / 16000 - native_s) < 0.01
    faster = espeak_speech(text, Voice(name="fast", espeak="en-gb", rate_wpm=230))
    assert len(faster) < len(pcm) * 0.9  # the rate is passed on


# ---- the blind file --------------------------------------------------------------------


def _blind_text() -> str:
    return BLIND.read_text()


def test_the_blind_file_parses_every_turn_has_a_rule_and_its_header_names_the_seed() -> None:
    from app.bench.blind_sample import PLAN, provenance

    text = _blind_text()
    found = parse_conversations(text, BLIND.name, held_out=True, blind=True)
    assert 3 <= len(found) <= 4 and 20 <= sum(len(c.turns) for c in found) <= 30
    assert all(c.blind and c.held_out and c.name.startswith("blind-") for c in found)
    assert all(t.rule.checks for c in found for t in c.turns)
    assert [c.name for c in found] == [name for name, _ in PLAN]
    seen = provenance(text)
    assert seen is not None and seen[0] > 0 and seen[2]
    assert "NO ONE TUNES ON THIS FILE" in text
    # Each turn says which intent and slots it was drawn as; timers start before follow-ups.
    intents = re.findall(r"^# (Hass\w+)", text, re.M)
    assert len(intents) == sum(len(c.turns) for c in found)
    assert intents == [i for _, steps in PLAN for i in steps]
    steps = dict(PLAN)
    weather = [t for c in found for t, i in zip(c.turns, steps[c.name], strict=True)
               if i == "HassGetWeather"]
    assert weather and all(t.rule.refusal is True for t in weather)


@pytest.mark.skipif(not HAS_HASSIL, reason="hassil / home-assistant-intents not installed")
def test_the_generator_with_the_same_seed_draws_the_same_file() -> None:
    from app.bench.blind_sample import blind_text, provenance, versions

    text = _blind_text()
    seen = provenance(text)
    assert seen is not None
    seed, date, data_version = seen
    if versions()["home-assistant-intents"] != data_version:
        pytest.skip(f"drawn from home-assistant-intents {data_version}, "
                    f"{versions()['home-assistant-intents']} installed")
    assert blind_text(seed, date) == text


@pytest.mark.skipif(not HAS_HASSIL, reason="hassil / home-assistant-intents not installed")
def test_the_generator_refuses_to_overwrite_a_drawn_file(tmp_path: Path) -> None:
    from app.bench.blind_sample import main

    out = tmp_path / "blind.toml"
    assert main(["--seed", "7", "--date", "2026-01-02", "--out", str(out)]) == 0
    first = out.read_text()
    assert "with seed 7 on 2026-01-02" in first
    assert main(["--seed", "8", "--out", str(out)]) == 1 and out.read_text() == first
    assert main(["--seed", "8", "--out", str(out), "--force"]) == 0 and out.read_text() != first
    parse_conversations(out.read_text(), "blind.toml", blind=True)  # any seed's file parses


def test_duration_rules_accept_digits_words_and_halves_but_not_another_time() -> None:
    from app.bench.blind_sample import duration_patterns

    def said(slots: dict[str, Any], reply: str) -> bool:
        return any(re.search(p, normalise(reply), re.I) for p in duration_patterns(slots))

    assert said({"minutes": 5}, "Timer set for five minutes.")
    assert said({"minutes": 5}, "A 5-minute timer, starting now.")
    assert not said({"minutes": 5}, "Timer set for 15 minutes.")
    assert said({"hours": 1, "minutes": 30}, "OK, an hour and a half.")
    assert said({"hours": 1, "minutes": 30}, "30 minutes and 1 hour, counting down.")
    assert said({"hours": 1, "minutes": 30}, "90 minutes, starting now.")
    assert not said({"hours": 1, "minutes": 30}, "1 hour timer started.")
    assert said({"minutes": 24, "seconds": 35}, "Twenty-four minutes and thirty-five seconds.")


# ---- a change must show in its own turn ------------------------------------------------


def test_turn_event_must_be_a_known_event() -> None:
    with pytest.raises(RuleError, match="turn_event must be one of"):
        parse_conversations('[[conversation]]\nname = "x"\n[[conversation.turn]]\n'
                            'say = "Pause the timer."\nturn_event = "timer_paused"\n', "x.toml")


def test_a_turn_whose_event_came_only_in_a_later_turn_is_wrong() -> None:
    conversation = parse_conversations("""
[[conversation]]
name = "x"
[[conversation.turn]]
say = "Pause the timer."
accept = ['paused']
turn_event = "timers"
[[conversation.turn]]
say = "Cancel the timer."
accept = ['cancel']
turn_event = "timers"
""", "x.toml")[0]
    events = [{"type": "turn", "speech_end_t": 1.5, "received": 2.0, "reply": "Timer paused."},
              {"type": "turn", "speech_end_t": 5.5, "received": 6.0, "reply": "Timer cancelled."},
              {"type": "timers", "received": 6.1}]
    client = SimpleNamespace(events=events, received=SimpleNamespace(
        first_audible_after=lambda t: None))
    marks = [quality._Mark(1.0, 1.4), quality._Mark(5.0, 5.4)]
    paused, cancelled = quality._outcomes(conversation, marks, client, "", ["v1", "v2"])
    assert paused.score.right is False and "no timers event in the turn" in paused.score.reasons
    assert cancelled.score.right is True and cancelled.voice == "v2"


# ---- the report ------------------------------------------------------------------------


def _turn(right: bool, *, held_out: bool = False, blind: bool = False,
          voice: str = "piper x1") -> TurnOutcome:
    score = TurnScore(right=right, repeat=False, echo=False, refusal=False, spoken_s=1.0,
                      sentences=1, reasons=() if right else ("no accepted answer",))
    return TurnOutcome("c", 1, "q", score, held_out=held_out, blind=blind, voice=voice,
                       reply="r", ttfa_client_ms=500.0)


def test_the_report_shows_the_blind_set_beside_the_held_out_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = QualityResult("default", [], turns=[
        _turn(True), _turn(True, held_out=True, voice="espeak en-us"),
        _turn(False, held_out=True, voice="espeak en-gb"),
        _turn(True, held_out=True, blind=True, voice="piper x0.85"),
        _turn(False, held_out=True, blind=True, voice="espeak en-us"),
        _turn(False, held_out=True, blind=True,
              voice="piper x1 (instead of espeak en+f3: espeak-ng not installed)"),
    ])
    s = summarise(result)
    assert s["held_out"]["scored"] == 2 and s["held_out"]["right_pct"] == 50.0
    assert s["blind"]["scored"] == 3 and s["blind"]["right_pct"] == 33.3
    assert s["blind"]["useful_pct"] == 33.3 and s["tuned"]["scored"] == 1
    assert s["voices"]["espeak en-us"] == 2
    head, row = table({"default": s})[:2]
    assert head.split()[:9] == ["config", "turns", "useful%", "held-out", "blind", "right%",
                                "held-out%", "blind%", "repeats"]
    assert row.split()[:8] == ["default", "6", "50.0", "50.0", "33.3", "50.0", "50.0", "33.3"]
    report([result], tmp_path)
    assert "1 held-out turns were spoken by the Piper voice instead" in capsys.readouterr().out
    saved = (tmp_path / "bench_quality.json").read_text()
    assert '"voice": "piper x0.85"' in saved and '"blind": true' in saved


def test_a_dev_file_replaces_the_shipped_conversations_and_is_spoken_as_held_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dev = tmp_path / "dev.toml"
    dev.write_text('[[conversation]]\nname = "dev1-a"\n[[conversation.turn]]\n'
                   'say = "Set a timer for two minutes."\nrefusal = false\n')
    seen: list[list[ConversationSpec]] = []

    async def run_config(server: Any, name: str, flags: Any, conversations: Any,
                         utterances: Any, options: Any) -> QualityResult:
        seen.append(conversations)
        raise RuntimeError("stop here")

    monkeypatch.setattr(quality, "run_config", run_config)
    monkeypatch.setattr(quality, "make_utterances", lambda conversations: {})
    with pytest.raises(RuntimeError, match="stop here"):
        quality.bench_quality(url="http://127.0.0.1:9", out=tmp_path / "out", files=[dev])
    (ran,) = seen
    assert [c.name for c in ran] == ["dev1-a"]
    assert ran[0].held_out and not ran[0].blind


def test_conversations_without_quality_is_a_usage_error_naming_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli import main

    assert main(["bench", "--conversations", "dev.toml"]) == 2
    assert "--conversations go with --quality" in capsys.readouterr().err
