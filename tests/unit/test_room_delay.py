"""pipeline.room.delay: the echo's delay from loudness envelopes, believed only where
something was heard at it."""

from __future__ import annotations

import numpy as np

from pipeline.room.delay import HeardFrames, estimate_delay

DT = 0.02
FLOOR_DB = -120.0


def syllables(frames: int, seed: int) -> np.ndarray:
    """A played envelope (dB) with a syllable rhythm: loud runs and quiet gaps."""
    rng = np.random.default_rng(seed)
    return np.array([rng.uniform(-30, -15) if (k // 6) % 2 == 0 else -60.0
                     for k in range(frames)])


def test_a_delayed_quieter_copy_gives_its_delay() -> None:
    far_db = syllables(150, 1)
    far_t = np.arange(150) * DT
    near_t = far_t + DT
    near_db = np.full(150, FLOOR_DB)
    near_db[15:] = far_db[:-15] - 10  # 0.3 s later, 10 dB down
    found = estimate_delay(HeardFrames(near_t, near_db, np.zeros(150, bool)), far_t, far_db,
                           1.0, nothing_back_db=40)
    assert found is not None and found.delay_s is not None
    assert abs(found.delay_s - 0.32) <= 0.04


def test_over_a_silent_microphone_a_sound_that_lines_up_is_no_delay() -> None:
    """The microphone heard nothing while the reply played, then a sound (a talk-over's
    unconfirmed start) lined up with the reply's start 0.6 s before it: 12 frames heard of
    the 30 whose played frame was loud at that delay."""
    far_t = np.arange(90, 150) * DT  # the reply: the window's last 60 frames, loud
    far_db = np.random.default_rng(2).uniform(-25, -15, 60)
    near_t = np.arange(150) * DT + DT
    near_db = np.full(150, FLOOR_DB)
    near_db[120:132] = far_db[:12] + 3
    heard = HeardFrames(near_t, near_db, np.zeros(150, bool))
    chance = estimate_delay(heard, far_t, far_db, 1.0, nothing_back_db=40)
    assert chance is not None and chance.delay_s is None
    # An echo 0.6 s late is heard all along: believed.
    near_db[120:] = far_db[:30] - 10
    found = estimate_delay(heard, far_t, far_db, 1.0, nothing_back_db=40)
    assert found is not None and found.delay_s is not None
    assert abs(found.delay_s - 0.62) <= 0.04


def test_the_users_frames_say_nothing_of_the_delay() -> None:
    far_db = syllables(150, 3)
    far_t = np.arange(150) * DT
    near_db = np.full(150, FLOOR_DB)
    near_db[15:] = far_db[:-15] - 10
    user = np.ones(150, bool)
    user[:60] = False  # mostly the user: no estimate
    assert estimate_delay(HeardFrames(far_t + DT, near_db, user), far_t, far_db, 1.0,
                          nothing_back_db=40) is None


def test_one_window_that_lines_up_elsewhere_does_not_move_the_smoothed_delay() -> None:
    """Background talk over our echo: now and then one window correlates better at a
    wrong lag; the smoothed correlations keep the delay that scored window after window."""
    far_db = syllables(150, 4)
    far_t = np.arange(150) * DT
    user = np.zeros(150, bool)
    echo = np.full(150, FLOOR_DB)
    echo[15:] = far_db[:-15] - 10  # 0.3 s
    wrong = np.full(150, FLOOR_DB)
    wrong[2:] = far_db[:-2] - 10  # a window that looks like 0.02 s
    earlier = None
    for _ in range(5):
        found = estimate_delay(HeardFrames(far_t + DT, echo, user), far_t, far_db, 1.0,
                               nothing_back_db=40, earlier=earlier)
        assert found is not None
        earlier = found.scores
    odd = estimate_delay(HeardFrames(far_t + DT, wrong, user), far_t, far_db, 1.0,
                         nothing_back_db=40, earlier=earlier)
    alone = estimate_delay(HeardFrames(far_t + DT, wrong, user), far_t, far_db, 1.0,
                           nothing_back_db=40)
    assert alone is not None and alone.delay_s is not None and alone.delay_s <= 0.06
    assert odd is not None and odd.delay_s is not None and abs(odd.delay_s - 0.32) <= 0.04
