"""The user's speech end, not the room's: talk quieter than the user that goes on under
and after their turn does not hold the turn open (RoomOptions.turn_range_db)."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.audio import rms_dbfs
from pipeline.events import AudioFrame, Endpoint, Pcm, SilenceOnset
from pipeline.room import Room, RoomOptions
from pipeline.vad import Endpointer, VadOptions
from tests.audio_helpers import Noise

FRAME_S = 0.02


def run(levels: list[float], options: RoomOptions | None = None) -> list[Endpoint | SilenceOnset]:
    """Frames of noise at these levels (dBFS; None-like -90 is silence) through the
    endpointer and the room gate (no neural VAD: every voiced frame is speech to it).
    webrtcvad is stood in for by a level check: what is not near silence is voice."""
    noise = Noise(seed=5)
    endpointer = Endpointer(VadOptions(), classify=lambda pcm: rms_dbfs(pcm) > -60,
                            room=Room(options or RoomOptions()))
    found: list[Endpoint | SilenceOnset] = []
    for k, level in enumerate(levels):
        pcm: Pcm = noise(level)
        found += [e for e in endpointer.push(AudioFrame(pcm, (k + 1) * FRAME_S))
                  if isinstance(e, Endpoint | SilenceOnset)]
    return found


def frames(seconds: float, low: float, high: float | None = None, seed: int = 0) -> list[float]:
    count = round(seconds / FRAME_S)
    if high is None:
        return [low] * count
    return list(np.random.default_rng(seed).uniform(low, high, count))


QUIET = frames(1.5, -80)
"""A quiet room heard before anyone speaks."""
USER = frames(1.6, -24, -16)
"""The user at the microphone: every frame a vowel (within 8 dB)."""
USER_END = len(QUIET + USER) * FRAME_S
TALK = frames(3.0, -40, -32, seed=1)
"""Other people 15 dB under the user (their peaks ~10 dB under), going on after the user."""


def ends(found: list[Endpoint | SilenceOnset]) -> list[Endpoint]:
    return [e for e in found if isinstance(e, Endpoint)]


def test_talk_under_the_turn_that_goes_on_after_it_ends_the_turn_at_the_users_end() -> None:
    found = run(QUIET + USER + TALK + frames(1.0, -80))
    (endpoint,) = ends(found)
    # The speech end is the user's (their last vowel and a word's soft end: tail_s), and
    # the endpoint comes a hangover after it, while the talk goes on.
    assert USER_END - FRAME_S <= endpoint.speech_end <= USER_END + 0.12 + 2 * FRAME_S
    assert endpoint.t < USER_END + 1.0
    onset = next(e for e in found if isinstance(e, SilenceOnset))
    assert onset.speech_end == endpoint.speech_end


def test_without_the_turn_floor_the_same_talk_holds_the_turn_until_it_stops() -> None:
    """What the test above guards against: the talk is louder than the quiet room and
    within the user's range, so it passed for the user until it stopped (~2.5-3 s)."""
    (endpoint,) = ends(run(QUIET + USER + TALK + frames(1.0, -80),
                           RoomOptions(turn_range_db=0)))
    assert endpoint.speech_end > USER_END + 2.5


@pytest.mark.parametrize("soft_db", [-28.0, -33.0])
def test_a_users_soft_last_word_is_kept(soft_db: float) -> None:
    """A last word 8 dB (above the floor) or 13 dB (under it, but right after the user's
    vowels and short) under the user's level, then a quiet room: the turn ends after it."""
    soft = frames(0.3, soft_db - 1, soft_db + 1, seed=2)
    (endpoint,) = ends(run(QUIET + USER + soft + frames(1.0, -80)))
    assert endpoint.speech_end == pytest.approx(USER_END + 0.3, abs=2 * FRAME_S)


def test_a_quiet_user_alone_in_a_quiet_room_is_not_cut() -> None:
    """A soft talker (-50 dBFS) with soft syllables 14 dB under their vowels in between:
    the floor is the turn's own, so they are one turn, ended at their end."""
    levels = QUIET + [lvl for _ in range(4) for lvl in frames(0.4, -52, -46) + frames(0.2, -64, -62)]
    levels = levels[:-10] + frames(1.0, -90)
    (endpoint,) = ends(run(levels))
    assert endpoint.speech_end == pytest.approx((len(levels) - 50) * FRAME_S, abs=2 * FRAME_S)


def test_talk_through_the_users_pauses_is_found_and_the_turn_ends_with_the_user() -> None:
    """Talk under the whole turn (a pause filled with it before the last words, short of
    the hangover): the user's last words resume the turn, and its end is theirs."""
    talk = frames(0.46, -40, -32, seed=3)
    levels = QUIET + USER + talk + frames(0.6, -24, -16, seed=4) + TALK + frames(1.0, -80)
    (endpoint,) = ends(run(levels))
    end = len(QUIET + USER + talk) * FRAME_S + 0.6
    assert end - FRAME_S <= endpoint.speech_end <= end + 0.12 + 2 * FRAME_S
    assert endpoint.t < end + 0.8  # not held open by the talk after
