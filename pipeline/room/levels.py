"""Levels of a room: how loud the room is, and how loud the person talking to us is.

Both are per session and plain arithmetic on frame levels (dBFS), so they are tested
without audio. The gate (pipeline.room.gate) asks them two questions about a frame:

- is it well above the room?  The room's level is a percentile of the frames heard while
  nobody was talking to us (not of the last utterance): steady noise and background talk
  set it, and a voice that is not louder than the room is part of the room.
- is it as loud as our user?  A near-field talker reaches the microphone 10-20 dB louder
  than people across the room; the user's level is learned from the turns they take.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from pipeline.audio import rms_dbfs

UNKNOWN_DB = -120.0
"""A level not known yet: every comparison against it passes."""


class RoomLevel:
    """The room's level: percentiles of the frames that were not the user's speech.

    `median_db` is the typical level of the room, `peak_db` (the 90th percentile) how loud
    it gets in a normal moment: background talk swings ~4-6 dB above its median, steady
    noise ~1 dB. The history is a count of frames, not of seconds, so a long utterance
    does not make the room forget itself.
    """

    def __init__(self, *, frames: int = 250, min_frames: int = 10, every: int = 5) -> None:
        self._levels: deque[float] = deque(maxlen=frames)
        self._min_frames = min_frames
        self._every = every
        self._since = 0
        self.median_db = UNKNOWN_DB
        self.peak_db = UNKNOWN_DB

    @property
    def known(self) -> bool:
        """True once enough of the room has been heard to judge against it."""
        return len(self._levels) >= self._min_frames

    def hear(self, level_db: float) -> None:
        """One frame of the room (not the user's speech, not our own echo)."""
        self._levels.append(level_db)
        self._since += 1
        if self._since >= self._every or len(self._levels) == self._min_frames:
            self._since = 0
            if self.known:
                median, peak = np.percentile(np.fromiter(self._levels, float), [50, 90])
                self.median_db, self.peak_db = float(median), float(peak)


class TalkerLevel:
    """The user's speaking level, learned from the turns they take.

    Each finished utterance contributes the 75th percentile of its speech frames (the
    vowels: how loud this person is at this microphone); turns are averaged with weight
    `rate`. Before the first turn ends, the first utterance stands for it. Without turns
    the learned level relaxes `decay_db_per_s` toward unknown, so a user who steps back
    from the microphone is heard again after a while.
    """

    def __init__(self, *, rate: float = 0.4, min_frames: int = 15,
                 decay_db_per_s: float = 0.05) -> None:
        self._rate = rate
        self._min_frames = min_frames
        self._decay = decay_db_per_s
        self._level = UNKNOWN_DB
        self._at = 0.0
        self._frames: list[float] = []
        self._cached = (0, UNKNOWN_DB)

    def level_db(self, t: float) -> float:
        """The learned level at time `t`; before the first turn, the current utterance's
        own level once it is long enough (else UNKNOWN_DB)."""
        if self._level <= UNKNOWN_DB:
            if len(self._frames) < self._min_frames:
                return UNKNOWN_DB
            if self._cached[0] != len(self._frames):
                self._cached = (len(self._frames), float(np.percentile(self._frames, 75)))
            return self._cached[1]
        return self._level - self._decay * max(0.0, t - self._at)

    def speech(self, level_db: float) -> None:
        """One frame of the current utterance that the gate took as the user's speech."""
        self._frames.append(level_db)

    def utterance_ended(self, t: float, *, keep: bool = True) -> None:
        """The utterance is over: learn from it (if `keep` and long enough), then forget it."""
        frames, self._frames = self._frames, []
        if not keep or len(frames) < self._min_frames:
            return
        heard = float(np.percentile(frames, 75))
        current = self.level_db(t)
        self._level = heard if current <= UNKNOWN_DB else current + self._rate * (heard - current)
        self._at = t


NOISY_EAR_SNR_DB = 30.0
"""The user's level over the room's median (the gate's levels, after noise suppression)
under which a room is noisy enough for the noisy-room ear. Measured on the room bench's
mixes (scratch probe, 6 held-out questions each): clean ~99, pink 25 dB SNR 41-42,
white 25 dB 36-37, babble 15 dB 23-27, pink 10 dB 26-27, babble 10 dB 19-22."""


class NoisyRoom:
    """Whether a stream's room is noisy enough to hear it with the noisy-room ear
    (Whisper base in noise: WER about 8 points lower than tiny.en, ~0.1-0.2 s slower).

    Decided from the user's level over the room's (`snr_db`), with `hysteresis_db` so a
    room near the line does not switch ears every turn; unknown levels keep the choice."""

    def __init__(self, below_db: float = NOISY_EAR_SNR_DB, hysteresis_db: float = 3.0) -> None:
        self.below_db = below_db
        self.hysteresis_db = hysteresis_db
        self.noisy = False

    def decide(self, snr_db: float | None) -> bool:
        if snr_db is None:
            return self.noisy
        if self.noisy and snr_db >= self.below_db + self.hysteresis_db:
            self.noisy = False
        elif not self.noisy and snr_db < self.below_db:
            self.noisy = True
        return self.noisy


PRE_ROLL_GAIN = 0.05
"""What the room before a turn's first loud frame is turned down to (-26 dB)."""


def quiet_pre_roll(frames: list[np.ndarray], loud_db: float, keep: int) -> list[np.ndarray]:
    """A turn's pre-roll with the room turned down: the frames before the first one at
    `loud_db` or over, but for the `keep` just before it (a soft first consonant), at
    PRE_ROLL_GAIN. Without such a frame, as it came."""
    first = next((i for i, pcm in enumerate(frames) if rms_dbfs(pcm) >= loud_db), None)
    if first is None or first <= keep:
        return frames
    start = first - keep
    quiet = [(pcm.astype(np.float32) * PRE_ROLL_GAIN).astype(pcm.dtype) for pcm in frames[:start]]
    return quiet + frames[start:]
