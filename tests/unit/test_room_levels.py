"""Room and talker levels: the room's noise floor per session, the user's level per turn."""

from __future__ import annotations

import numpy as np

from pipeline.room.levels import UNKNOWN_DB, NoisyRoom, RoomLevel, TalkerLevel


def test_the_room_is_unknown_until_enough_of_it_is_heard() -> None:
    room = RoomLevel(min_frames=10)
    for _ in range(9):
        room.hear(-40.0)
    assert not room.known and room.median_db == UNKNOWN_DB
    room.hear(-40.0)
    assert room.known and room.median_db == -40.0 and room.peak_db == -40.0


def test_the_room_level_is_its_median_and_its_peak_the_90th_percentile() -> None:
    """Background talk swings: its median and its usual peaks are told apart."""
    room = RoomLevel(frames=200, every=1)
    levels = np.random.default_rng(0).uniform(-45, -35, 200)
    for level in levels:
        room.hear(float(level))
    assert abs(room.median_db - -40) < 1
    assert abs(room.peak_db - -36) < 1


def test_the_room_floor_follows_a_room_that_gets_louder_within_its_window() -> None:
    room = RoomLevel(frames=100, every=1)
    for _ in range(100):
        room.hear(-60.0)
    for _ in range(60):
        room.hear(-35.0)  # a fan switched on: more than half the window now
    assert room.median_db == -35.0


def test_the_user_level_is_learned_from_the_loud_part_of_their_turns() -> None:
    talker = TalkerLevel(min_frames=5)
    for level in [-30.0] * 5 + [-20.0] * 15:  # 75th percentile: the vowels
        talker.speech(level)
    talker.utterance_ended(10.0)
    assert talker.level_db(10.0) == -20.0


def test_each_turn_moves_the_user_level_part_of_the_way() -> None:
    talker = TalkerLevel(rate=0.5, min_frames=1, decay_db_per_s=0.0)
    talker.speech(-20.0)
    talker.utterance_ended(1.0)
    talker.speech(-30.0)
    talker.utterance_ended(2.0)
    assert talker.level_db(2.0) == -25.0


def test_a_short_utterance_teaches_nothing() -> None:
    talker = TalkerLevel(min_frames=15)
    for _ in range(14):
        talker.speech(-10.0)
    talker.utterance_ended(1.0)
    assert talker.level_db(1.0) == UNKNOWN_DB


def test_without_turns_the_user_level_relaxes_so_a_softer_user_is_heard_again() -> None:
    talker = TalkerLevel(min_frames=1, decay_db_per_s=0.05)
    talker.speech(-20.0)
    talker.utterance_ended(0.0)
    assert talker.level_db(60.0) == -23.0


def test_before_any_turn_the_current_utterance_stands_for_the_user() -> None:
    talker = TalkerLevel(min_frames=5)
    for _ in range(4):
        talker.speech(-20.0)
    assert talker.level_db(1.0) == UNKNOWN_DB
    talker.speech(-20.0)
    assert talker.level_db(1.0) == -20.0


def test_a_room_is_noisy_under_the_line_and_quiet_again_only_past_its_hysteresis() -> None:
    noisy = NoisyRoom(below_db=30.0, hysteresis_db=3.0)
    assert noisy.decide(None) is False  # unknown levels keep the choice
    assert noisy.decide(31.0) is False
    assert noisy.decide(29.5) is True
    assert noisy.decide(None) is True
    assert noisy.decide(32.0) is True  # within the hysteresis: no switching back and forth
    assert noisy.decide(33.0) is False
