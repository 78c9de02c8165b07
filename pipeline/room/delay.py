"""The echo's delay: where the played loudness envelope best explains the heard one.

Pure arithmetic for pipeline.room.echo's guard: the heard frames' times and levels (and
which the gate took as the user), the played frames' times and levels; no state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pipeline.events import FRAME_MS

Floats = npt.NDArray[np.float64]

JUMP_RUN = 3
JUMP_MARGIN = 0.1
"""A believed delay gives way to another only after this many estimates in a row (0.6 s)
near it, its correlation this much above the believed delay's (`jump_believed`). A new
delay restarts the guard's loss from its cautious start, deaf to the user for ~1 s: in
background talk the envelope correlation found a wrong delay for two estimates now and
then (0.32 s → 0.12, 0.02 s), and a talk-over just after it was taken for our echo (room
bench, echo and talk: 1.6 s)."""
SMOOTHING = 0.3
"""Each estimate's correlations count this much against the ones before (~0.6 s memory):
the right delay scores high window after window, a chance one in a few (background talk
and our echo together: 0.32 s believed, then 0.18 and 0.00 s, and our echo cut a reply)."""
ECHO_FRAMES = 10
ECHO_SHARE = 0.5
"""A delay is believed only where the microphone heard something at that delay: of the
frames (not the user's) whose played frame was loud at it, at least this many, and this
share, heard within `nothing_back_db` of it. Over a silent microphone (headphones) a
correlation of envelopes is chance: a talk-over's first syllable lined up with the reply's
start (test_webrtc on a loaded box)."""


@dataclass(frozen=True)
class HeardFrames:
    """The microphone frames an estimate looks at (the newest, still pending, left out)."""

    t: Floats
    """When each arrived (s, on the guard's microphone clock)."""
    db: Floats
    """Each one's level (dBFS above 100 Hz)."""
    user: npt.NDArray[np.bool_]
    """The gate took it as the user: it says nothing of our echo."""


@dataclass(frozen=True)
class Estimate:
    scores: Floats
    """The envelope correlation at every lag tried (FRAME_MS apart from 0), smoothed."""
    delay_s: float | None
    """The lag that stands out, where something was heard; None if none does."""


def estimate_delay(heard: HeardFrames, far_t: Floats, far_db: Floats, max_delay_s: float, *,
                   nothing_back_db: float, earlier: Floats | None = None) -> Estimate | None:
    """Correlate the played envelope at each lag with the heard one (`earlier`: the last
    estimate's smoothed scores, SMOOTHING); None when this window cannot tell."""
    envelope = played_envelope(heard.t, far_t, far_db, max_delay_s)
    if envelope is None or heard.user.mean() > 0.5:
        return None  # nothing played that can echo here, or mostly the user talking
    lags, far_env = envelope
    # The user's frames say nothing of the delay: left out (not floored, which made holes
    # where the user spoke, and in background talk the holes lined up with played ones).
    ours = ~heard.user
    near_env = np.maximum(heard.db[ours], heard.db[ours].max() - 40)
    scores = np.array([_correlation(row[ours], near_env) for row in far_env])
    if earlier is not None and len(earlier) == len(scores):
        scores = (1 - SMOOTHING) * earlier + SMOOTHING * scores
    best = int(np.argmax(scores))
    if scores[best] < 0.5 or scores[best] - float(np.median(scores)) < 0.15:
        return Estimate(scores, None)
    loud = (far_env[best] >= far_env.max() - 20) & ours
    echoed = loud & (heard.db >= far_env[best] - nothing_back_db)
    if int(echoed.sum()) < max(ECHO_FRAMES, ECHO_SHARE * int(loud.sum())):
        return Estimate(scores, None)  # little was heard at that delay: chance
    return Estimate(scores, float(lags[best]))


def played_envelope(near_t: Floats, far_t: Floats, far_db: Floats,
                    max_delay_s: float) -> tuple[Floats, Floats] | None:
    """The lags tried and, per lag, the played level (dB, floored 40 dB under the loudest)
    `lag` before each heard frame; None when nothing played can echo in this window."""
    if far_t[-1] < near_t[0] - max_delay_s:
        return None
    lags = np.arange(0.0, max_delay_s + 1e-9, FRAME_MS / 1000)
    targets = near_t[None, :] - lags[:, None]
    index = np.clip(np.searchsorted(far_t, targets), 1, len(far_t) - 1)
    before, after = far_t[index - 1], far_t[index]
    nearest = np.where(np.abs(targets - before) <= np.abs(after - targets), index - 1, index)
    found = np.abs(far_t[nearest] - targets) <= FRAME_MS / 2000 + 0.002
    floor = far_db.max() - 40
    return lags, np.where(found, np.maximum(far_db[nearest], floor), floor)


def jump_believed(run: int, score: float, believed_score: float) -> bool:
    """Whether a new delay estimate, `run` estimates in a row near it, replaces the believed
    delay: its envelope correlation `score` against the believed delay's."""
    return run >= JUMP_RUN and score - believed_score >= JUMP_MARGIN


def _correlation(a: Floats, b: Floats) -> float:
    a, b = a - a.mean(), b - b.mean()
    scale = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum() / scale) if scale > 0 else 0.0
