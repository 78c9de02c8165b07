"""Noise suppression of raw audio only where the room is noisy: decided on the raw level,
between utterances, with hysteresis; the suppressor hears every frame either way."""

from __future__ import annotations

import numpy as np

from pipeline.room import Room, RoomOptions
from pipeline.room.conditioning import NOISY_ROOM_DB, Suppression
from tests.audio_helpers import Noise

noise = Noise(seed=3)


class Halve:
    def __init__(self) -> None:
        self.frames = 0

    def process(self, pcm: np.ndarray) -> np.ndarray:
        self.frames += 1
        return (pcm // 2).astype(np.int16)


def settle(room: Room, level_db: float, frames: int = 80, t: float = 0.0) -> float:
    """`frames` of a room at `level_db` with nobody talking; the time after them."""
    for _ in range(frames):
        t += 0.02
        room.judge(room.condition(noise(level_db)), t, False, in_utterance=False)
    return t


def suppressed(room: Room, level_db: float) -> bool:
    frame = noise(level_db)
    return room.condition(frame) is not frame


def test_a_quiet_room_is_not_suppressed_a_noisy_one_is() -> None:
    quiet, noisy = Room(conditioner=Halve()), Room(conditioner=Halve())
    assert suppressed(quiet, -70)  # nothing known yet: a raw stream is suppressed
    settle(quiet, -70)
    settle(noisy, -35)
    assert not suppressed(quiet, -70)
    assert suppressed(noisy, -35)


def test_the_suppressor_hears_every_frame_even_while_its_output_is_unused() -> None:
    halve = Halve()
    room = Room(conditioner=halve)
    settle(room, -70, frames=40)
    assert halve.frames == 80  # two 10 ms halves per 20 ms frame


def test_a_room_that_gets_noisy_is_suppressed_from_the_next_utterance_on() -> None:
    room = Room(conditioner=Halve())
    t = settle(room, -70)
    assert not suppressed(room, -70)
    for _ in range(200):  # a fan starts while the user speaks: nothing changes mid-turn
        t += 0.02
        room.judge(room.condition(noise(-35)), t, True, in_utterance=True)
    assert not suppressed(room, -35)
    settle(room, -35, frames=300, t=t)  # the room, heard between turns, is now noisy
    assert suppressed(room, -35)


def test_always_suppress_keeps_the_old_behaviour() -> None:
    room = Room(RoomOptions(always_suppress=True), conditioner=Halve())
    settle(room, -70)
    assert suppressed(room, -70)


def test_hysteresis_keeps_a_borderline_room_from_flapping() -> None:
    policy = Suppression()
    for _ in range(30):
        policy.room.hear(NOISY_ROOM_DB - 1)  # just under the line: stays on
    assert policy.decide()
    for _ in range(300):
        policy.room.hear(NOISY_ROOM_DB - 10)
    assert not policy.decide()
    for _ in range(300):
        policy.room.hear(NOISY_ROOM_DB - 1)  # and once off, just under it stays off
    assert not policy.decide()


def test_before_the_room_is_known_the_quietest_of_what_was_heard_decides() -> None:
    """A satellite stream starts at the wake word: its first pause says how noisy it is."""
    policy = Suppression()
    for _ in range(12):
        policy.hear(noise(-70))
    assert not policy.decide()
