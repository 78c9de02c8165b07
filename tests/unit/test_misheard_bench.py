"""`apace bench --misheard`: the room mix, the routing through the real skills, the score."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from app.bench.asr import asr_set
from app.bench.misheard import Routed, hear_all, in_room, report, routing_set, score, skills_route
from app.bench.room_sounds import active_rms, pink_noise
from pipeline.events import FRAME_SAMPLES


def routed(want: str | None, got: str | None, *, held_out: bool = False,
           same: bool = False) -> Routed:
    return Routed("babble15", "text", "piper x1", held_out, "heard", want, got, same)


def test_the_score_counts_reached_lost_to_the_llm_other_skill_and_taken() -> None:
    scores = score([routed("convert", "convert", same=True), routed("convert", None),
                    routed("timer", "list"), routed(None, "math"), routed(None, None),
                    routed("clock", "clock", held_out=True)])
    tuned, held = scores["babble15/tuned"], scores["babble15/held-out"]
    assert tuned == {"skill_requests": 3, "reached_skill": 1, "same_reply": 1, "to_llm": 1,
                     "other_skill": 1, "llm_requests": 2, "llm_taken_by_skill": 1}
    assert held["skill_requests"] == 1 and held["reached_skill"] == 1 and held["same_reply"] == 0
    assert "1/3" in report(scores) and "1/2" in report(scores)


def test_the_routing_set_is_held_out_and_new_to_the_asr_set() -> None:
    lines = routing_set()
    assert len(lines) >= 20 and all(line.held_out for line in lines)
    assert not {line.text for line in lines} & {line.text for line in asr_set()}


def test_every_routing_line_as_written_reaches_a_skill(tmp_path: Path) -> None:
    route = skills_route(tmp_path)
    for line in routing_set():
        skill, reply = route(line.text)
        assert skill is not None and reply, line.text


def test_the_room_is_mixed_at_its_snr_and_cut_off_before_the_words() -> None:
    rng = np.random.default_rng(1)
    t = np.arange(16000) / 16000
    speech = (8000 * np.sin(2 * np.pi * 300 * t)).astype(np.int16)
    noise = pink_noise(5 * 16000, rng)
    mixed = in_room(speech, noise, 10.0, 0, None)
    assert len(mixed) == len(speech) // FRAME_SAMPLES * FRAME_SAMPLES
    residue = mixed.astype(np.float64) - speech[: len(mixed)]
    snr = 20 * np.log10(active_rms(speech) / (np.sqrt(np.mean(residue**2)) / 32768))
    assert 8.5 < snr < 11.5
    assert in_room(speech, None, 10.0, 0, None) is speech


def test_hear_all_routes_what_was_heard_against_what_was_said(tmp_path: Path) -> None:
    from app.bench.asr import Clip

    pcm = np.zeros(16000, np.int16)
    clips = [Clip("Set a timer for ten minutes.", "piper x1", pcm),
             Clip("Who wrote Romeo and Juliet?", "piper x1", pcm)]
    heard = iter(["Center timer for 10 minutes.", "Who wrote Romeo and Juliet?"] * 3)
    rooms = {"babble": np.zeros(5 * 16000, np.float32), "pink": np.zeros(5 * 16000, np.float32)}
    results = hear_all(clips, 1, skills_route(tmp_path), lambda _: next(heard),
                       lambda: (lambda pcm: pcm), rooms)
    assert [r.condition for r in results] == ["clean"] * 2 + ["babble15"] * 2 + ["pink10"] * 2
    assert results[0].want == "timer" and results[1].want is None and results[1].got is None
