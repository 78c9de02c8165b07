"""`apace bench --room`: the room mix a client hears, and how turns are scored."""

from __future__ import annotations

import numpy as np
import pytest

from app.bench.room import parse_conditions
from app.bench.room_score import Asked, summarize
from app.bench.room_sounds import RoomMix, active_rms, impulse_response, pink_noise, scaled
from pipeline.events import FRAME_SAMPLES


def turn(speech_end: float, transcript: str) -> dict[str, object]:
    return {"type": "turn", "received": speech_end + 2, "speech_end_t": speech_end,
            "transcript": transcript}


def test_a_turn_of_no_question_and_a_questions_second_turn_are_phantoms() -> None:
    asked = [Asked("What is the capital of France?", 1.0, 3.0),
             Asked("How do I boil an egg?", 10.0, 12.0)]
    events = [turn(3.1, "What is the capital of France?"), turn(7.0, "hey"),
              turn(12.1, "How do I"), turn(12.9, "boil an egg?")]
    summary = summarize(asked, events)
    assert summary["turns"] == 4 and summary["phantom_turns"] == 2 and summary["lost"] == 0
    assert summary["wer"] == 0.0  # the split question's words all arrived


def test_a_lost_question_counts_all_its_words_as_errors() -> None:
    asked = [Asked("one two three", 1.0, 2.0), Asked("four five six", 5.0, 6.0)]
    summary = summarize(asked, [turn(2.1, "one two three")])
    assert summary["lost"] == 1 and summary["wer"] == 0.5


def test_a_barge_in_while_the_user_is_silent_is_a_self_interruption() -> None:
    asked = [Asked("a question", 1.0, 2.0), Asked("talking over", 8.0, 9.0, talk_over=True)]
    events = [{"type": "barge_in", "received": 5.0}, {"type": "barge_in", "received": 8.3}]
    summary = summarize(asked, events)
    assert summary["self_interruptions"] == 1
    assert summary["talk_overs"] == 1 and summary["talk_overs_honoured"] == 1


def test_conditions_are_chosen_by_name_and_unknown_names_refused() -> None:
    assert [c.name for c in parse_conditions("babble15,echo10")] == ["babble15", "echo10"]
    assert "clean" in [c.name for c in parse_conditions(None)]
    with pytest.raises(ValueError, match="unknown condition"):
        parse_conditions("disco")


def test_noise_is_set_the_asked_ratio_below_the_users_active_level() -> None:
    noise = scaled(pink_noise(16000, np.random.default_rng(0)), 0.1, 10.0)
    assert 20 * np.log10(active_rms(noise) / 0.1) == pytest.approx(-10, abs=0.5)


def test_the_room_mix_plays_the_reply_back_after_its_delay_and_attenuated() -> None:
    mix = RoomMix(None, echo_db=-10, echo_delay_s=0.1)
    reply = np.full(FRAME_SAMPLES, 10000, np.int16)
    silence = np.zeros(FRAME_SAMPLES, np.int16)
    out = []
    for _ in range(10):
        mix.heard(reply)
        out.append(mix.mix(silence))
    first = next(k for k, frame in enumerate(out) if frame.any())
    assert first == 5  # 100 ms of audio held in the line
    assert int(out[first][0]) == pytest.approx(10000 * 10 ** (-10 / 20), abs=2)


def test_a_reverberant_echo_rings_on_after_the_reply_and_keeps_its_level() -> None:
    """Through the room the echo is the reply convolved with the room's response, frame by
    frame as it would be whole; its energy is the plain echo's (unit-energy response)."""
    rng = np.random.default_rng(1)
    reply = (rng.standard_normal(FRAME_SAMPLES * 40) * 3000).astype(np.int16)
    plain, room = RoomMix(None, echo_db=-10), RoomMix(None, echo_db=-10, echo_rt60_s=0.3)
    silence = np.zeros(FRAME_SAMPLES, np.int16)
    heard: dict[str, list[np.ndarray]] = {"plain": [], "room": []}
    for k in range(80):  # 0.8 s of reply, then 0.8 s of nothing played
        part = reply[k * FRAME_SAMPLES:(k + 1) * FRAME_SAMPLES] if k < 40 else silence
        for name, mix in (("plain", plain), ("room", room)):
            mix.heard(part)
            heard[name].append(mix.mix(silence).astype(np.float64))
    plain_echo, room_echo = np.concatenate(heard["plain"]), np.concatenate(heard["room"])
    whole = np.convolve(reply / 32768.0, impulse_response(0.3, np.random.default_rng(11)))
    expected = whole * 10 ** (-10 / 20) * 32767
    late = room_echo[1600:1600 + len(expected)]  # 100 ms late, as one convolution
    assert np.allclose(late, expected, atol=2) and not room_echo[1600 + len(expected):].any()
    after = slice(1600 + len(reply), 1600 + len(reply) + 1600)
    assert not plain_echo[after].any() and np.abs(room_echo[after]).max() > 100  # it rings
    assert np.sum(room_echo**2) == pytest.approx(np.sum(plain_echo**2), rel=0.25)


def test_a_soft_talker_is_mixed_voice_db_down_over_the_room() -> None:
    mix = RoomMix(np.full(FRAME_SAMPLES, 0.001, np.float32), voice_db=-30)
    out = mix.mix(np.full(FRAME_SAMPLES, 10000, np.int16))
    assert int(out[0]) == pytest.approx(10000 * 10 ** (-30 / 20) + 0.001 * 32768, abs=2)


def test_a_talk_over_is_scored_apart_from_the_questions() -> None:
    asked = [Asked("tell me a story", 1.0, 2.0), Asked("stop please", 5.0, 6.0, talk_over=True)]
    events = [turn(2.1, "tell me a story"), {"type": "barge_in", "received": 5.3}]
    summary = summarize(asked, events)
    assert summary["questions"] == 1 and summary["lost"] == 0 and summary["wer"] == 0.0
    assert summary["talk_overs_honoured"] == 1 and summary["talk_overs_answered"] == 0
    late = Asked("and then", 9.0, 10.0, talk_over=True, over_reply=False)  # reply had ended
    summary = summarize([*asked, late], [*events, turn(10.1, "and then")])
    assert summary["talk_overs"] == 1 and summary["talk_overs_after_reply"] == 1
    assert summary["questions"] == 1 and summary["phantom_turns"] == 0


def test_a_backchannel_over_a_reply_is_scored_apart_cut_or_answered() -> None:
    """A "mm-hm" over a reply is no question (nor its turn a phantom); a barge-in while it
    is said cut the reply, and a turn of its own answered it: both are counted."""
    asked = [Asked("what is two and two", 1.0, 2.0),
             Asked("tell me a story", 5.0, 6.0, lead_in=True),
             Asked("mm hm", 8.0, 8.5, backchannel=True),
             Asked("tell me a story", 12.0, 13.0, lead_in=True),
             Asked("okay", 15.0, 15.4, backchannel=True)]
    events = [turn(2.1, "what is two and two"), turn(6.1, "tell me a story"),
              turn(13.1, "tell me a story"), {"type": "barge_in", "received": 16.9},
              turn(15.4, "and then make some")]  # its speech ended at 15.4
    summary = summarize(asked, events)
    assert summary["questions"] == 1 and summary["wer"] == 0.0 and summary["phantom_turns"] == 0
    assert (summary["backchannels"], summary["backchannels_cut"]) == (2, 1)
    assert summary["backchannels_answered"] == 1 and summary["self_interruptions"] == 0
    assert summary["talk_overs"] == 0


def test_skill_answers_time_the_room_apart_from_the_llm() -> None:
    """TTFA of the questions a skill answered (no LLM in it) and the server's wait from
    the end of speech to the endpoint are reported apart from TTFA over all questions."""
    asked = [Asked("set a timer for five minutes", 1.0, 2.0, ttfa_ms=400.0),
             Asked("what is a noun", 5.0, 6.0, ttfa_ms=3000.0),
             Asked("what is six times seven", 9.0, 10.0, ttfa_ms=600.0)]
    events = [{**turn(2.05, "set a timer for five minutes"), "skill": "timer",
               "timeline_ms": {"endpoint": 250.0}},
              {**turn(6.05, "what is a noun"), "skill": None, "timeline_ms": {"endpoint": 1000.0}},
              {**turn(10.05, "what is six times seven"), "skill": "math",
               "timeline_ms": {"endpoint": 300.0}}]
    summary = summarize(asked, events)
    assert summary["ttfa_client"]["p50"] == 600.0
    assert summary["ttfa_client_skill"] == {"n": 2, "p50": 500.0}
    assert summary["endpoint_ms_p50"] == 300.0


def test_numbers_count_as_the_same_words_however_written() -> None:
    asked = [Asked("Set a timer for forty five minutes.", 1.0, 2.0),
             Asked("Calculate eight percent of two hundred fifty.", 5.0, 6.0)]
    events = [turn(2.1, "Set a timer for 45 minutes."), turn(6.1, "calculate 8% of 250.")]
    assert summarize(asked, events)["wer"] == 0.0
    events = [turn(2.1, "Set a timer for 45 minutes."), turn(6.1, "calculate 8% of 200.")]
    assert summarize(asked, events)["wer"] > 0.0


def test_the_servers_speculation_counters_are_reported_per_condition(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from app.bench.room import CONDITIONS, ConditionResult, _speculation
    from app.bench.room_report import report

    class Server:
        def get(self, path: str) -> object:
            assert path == "/api/stats"
            return {"engine": {"speculation": {"started": 9, "reheard": 3, "kept": 2,
                                               "note": "not a count"},
                               "noisy_ear_replies": 4, "holds": 5, "holds_released": 1}}

    assert _speculation(None) == {}
    assert _speculation(Server()) == {  # type: ignore[arg-type]
        "started": 9, "reheard": 3, "kept": 2, "noisy_ear_replies": 4, "holds": 5,
        "holds_released": 1}
    result = ConditionResult(CONDITIONS["babble15"], summary={
        **summarize([Asked("one two", 1.0, 2.0)], [turn(2.1, "one two")]),
        "speculation": {"started": 9, "cancelled": 1, "reheard": 3, "kept": 2,
                        "noisy_ear_replies": 4, "holds": 5, "holds_released": 1}})
    report([result])
    out = capsys.readouterr().out
    assert "heard again after late voice 3 (2 the same words)" in out
    assert "replies the noisy-room ear heard 4" in out
    assert "replies held 5 (went on: 1)" in out


def test_the_long_ask_before_a_talk_over_is_not_one_of_the_conditions_questions() -> None:
    asked = [Asked("one two", 1.0, 2.0, ttfa_ms=500.0),
             Asked("tell me a long story", 5.0, 6.0, lead_in=True, ttfa_ms=2500.0),
             Asked("one two", 7.0, 8.0, talk_over=True)]
    summary = summarize(asked, [turn(2.1, "one two"), turn(6.1, "tell me a song")])
    assert summary["questions"] == 1 and summary["wer"] == 0.0
    assert summary["ttfa_client"] == {"p50": 500.0, "p95": 500.0}


def test_each_conditions_ttfa_is_paired_with_the_clean_rooms_question_by_question(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from app.bench.room import CONDITIONS, ConditionResult
    from app.bench.room_report import pair_with_clean, report

    def asked(*ttfa: float | None) -> list[Asked]:
        return [Asked(f"q{i}", 10.0 * i, 10.0 * i + 1, ttfa_ms=t) for i, t in enumerate(ttfa)]

    story = Asked("story", 60.0, 61.0, lead_in=True, ttfa_ms=3000.0)
    clean = ConditionResult(CONDITIONS["clean"], [*asked(600, 1500, 1500, 600, None), story])
    # One answer moved from the skill's mode to the LLM's: the p50s jump, the pairs do not.
    noisy = ConditionResult(CONDITIONS["babble15"], asked(650, 1550, 1520, 1500, 700))
    for r in (clean, noisy):
        r.summary = summarize(r.asked, [])
    pair_with_clean([clean, noisy])
    assert "ttfa_vs_clean" not in clean.summary
    assert noisy.summary["ttfa_vs_clean"] == {"n": 4, "median_diff_ms": 50.0,
                                              "clean_p50_ms": 1050.0, "p50_ms": 1510.0}
    report([clean, noisy])
    assert ("babble15: TTFA against the clean room, the same 4 questions: median difference "
            "+50 ms (p50 1050 → 1510)") in capsys.readouterr().out
    alone = ConditionResult(CONDITIONS["babble15"], asked(650))
    pair_with_clean([alone])
    assert "ttfa_vs_clean" not in alone.summary


def test_a_talk_over_count_out_of_range_is_refused_before_anything_starts(tmp_path) -> None:
    from app.bench.room import bench_room

    for bad in (0, 51):
        with pytest.raises(ValueError, match="--talk-overs must be 1-50"):
            bench_room(url=None, out=tmp_path, rounds=1, conditions=parse_conditions("clean"),
                       talk_overs=bad)
        with pytest.raises(ValueError, match="--backchannels must be 1-50"):
            bench_room(url=None, out=tmp_path, rounds=1, conditions=parse_conditions("clean"),
                       backchannels=bad)


def test_a_reply_held_before_its_barge_in_stopped_when_it_went_quiet_not_after_the_answer() -> None:
    """The story plays, is held at 0.3 s, let go at 0.5 s, held again at 1.0 s; the barge-in
    is told at 1.3 s; the answer plays from 3.5 to 7.4 s. The reply stopped at 1.0 s."""
    from app.bench.room import stopped_at

    def frames(a: float, b: float, db: float = -20.0) -> list[tuple[float, float]]:
        return [(round(a + 0.02 * k, 2), db) for k in range(round((b - a) / 0.02))]

    levels = (frames(-2.0, 0.3) + frames(0.3, 0.5, -90) + frames(0.5, 1.0)
              + frames(1.0, 3.5, -90) + frames(3.5, 7.4))
    assert stopped_at(levels, 0.0, 1.3) == pytest.approx(0.98)
    held = frames(-2.0, 0.3) + frames(0.3, 3.5, -90) + frames(3.5, 7.4)
    assert stopped_at(held, 0.0, 0.67) == pytest.approx(0.28)  # held at 0.3, barge-in at 0.67
    assert stopped_at(frames(1.0, 3.0, -90), 1.0, 1.5) is None  # nothing audible


def test_a_question_heard_late_and_misheard_is_that_question_not_a_phantom_and_a_loss() -> None:
    # Background talk held the floor 1.5 s past the question's end: the turn that ends
    # then is the question, misheard ("to all of you"), not a phantom plus a lost question.
    asked = [Asked("Send a message to Olivia", 1.0, 3.0), Asked("one two", 10.0, 11.0)]
    events = [turn(4.5, "Send a message to all of you"), turn(11.1, "one two")]
    summary = summarize(asked, events)
    assert summary["phantom_turns"] == 0 and summary["lost"] == 0
    assert 0.0 < summary["wer"] < 0.5


def test_a_late_turn_sharing_no_word_with_the_question_is_the_rooms() -> None:
    asked = [Asked("one two three", 1.0, 2.0), Asked("four five", 10.0, 11.0)]
    events = [turn(5.0, "council"), turn(6.0, "one two three four"), turn(11.1, "four five")]
    summary = summarize(asked, events)
    # the later turn sharing the question's words is it; "council" is a phantom
    assert summary["phantom_turns"] == 1 and summary["lost"] == 0
    summary = summarize(asked, [turn(5.0, "council"), turn(11.1, "four five")])
    assert summary["phantom_turns"] == 1 and summary["lost"] == 1


def test_the_speech_end_lag_is_the_servers_speech_end_after_the_users_true_end() -> None:
    """Background talk taken for the user puts the server's speech end (and so its whole
    timeline) after the user's: the bench reads it against the clean voice's end."""
    asked = [Asked("one two three", 1.0, 2.0), Asked("four five six", 5.0, 6.0),
             Asked("seven eight", 9.0, 10.0)]
    summary = summarize(asked, [turn(2.05, "one two three"), turn(6.9, "four five six"),
                                turn(10.1, "seven eight")])
    assert summary["speech_end_lag_ms"]["p50"] == pytest.approx(100, abs=1)
    assert summary["speech_end_lag_ms"]["p90"] == pytest.approx(740, abs=1)


def test_an_after_rooms_talk_plays_from_the_questions_first_sound_until_its_tail_ends() -> None:
    """`-after` conditions: a quiet room, then talk from the question's first sound to
    `tail_s` after its end (what the gate had not heard before the turn)."""
    mix = RoomMix(np.full(16000, 0.01, np.float32), always=False)
    silence = np.zeros(FRAME_SAMPLES, np.int16)
    assert not mix.mix(silence).any()  # quiet until told
    mix.talk(after_s=0.04, for_s=0.06)  # 2 frames quiet, then 3 of talk
    heard = [bool(mix.mix(silence).any()) for _ in range(7)]
    assert heard == [False, False, True, True, True, False, False]
    always = RoomMix(np.full(16000, 0.01, np.float32))
    assert always.mix(silence).any()


def test_the_after_condition_talks_on_after_each_question() -> None:
    (after,) = parse_conditions("babble15-after")
    assert after.noise == "babble" and after.snr_db == 15 and after.talk_tail_s
    assert parse_conditions("babble15")[0].talk_tail_s is None  # the old one stays as it was
