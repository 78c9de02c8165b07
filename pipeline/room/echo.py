"""Our own voice coming back: predict the echo of what was played, and discount it.

The server knows exactly what it played and when (every frame the transport pops). A
microphone that hears the loudspeaker picks that audio up again some time later (the
way out, the room, the way back: 100-600 ms over WebRTC), quieter and coloured by the
room. `EchoGuard` learns that delay and that loss per band from the audio itself, and
for each microphone frame predicts how much of its energy, band by band, is our own
voice. What the prediction does not explain (the residual) is someone else: only that
may start a turn or interrupt a reply.

It is a residual-echo gate, not a canceller: it does not subtract the echo from the
audio that goes to Whisper, it decides what counts as the user speaking. It starts out
cautious (until it has heard a reply, the echo is assumed as loud as what was played, or
`start_db` down where the client cancels its own echo) and converges from there, so an
unknown room never makes the assistant interrupt itself.

    delay: the cross-correlation of the played and heard loudness envelopes, re-estimated
           every 200 ms while something was played (pipeline.room.delay); unknown → every
           delay up to max_delay_s. Believed once two estimates in a row agree and the
           microphone heard something at it; replaced by another only once JUMP_RUN
           estimates in a row put it there and it explains the echo clearly better
    loss:  per band, the 90th percentile of heard/played over the loud played frames the
           gate did not take as the user (double talk would teach it the user's voice;
           a talk-over's first frames, before the gate confirmed them, are given back),
           from 0.7 s of such frames before it replaces the cautious start (20 frames gave
           a loss 10 dB too low in 5 of 30 first replies, 35 in none; meanwhile, once the
           delay is known, a provisional loss from 10 frames with 3 dB more head-room:
           EARLY_FRAMES) — or at once when a run of playing heard nothing at all for
           max_delay_s (headphones). When the delay is first known, the frames already
           heard at it are learned from at once (`_learn_back`)
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pipeline.audio import dbfs
from pipeline.events import FRAME_MS, Pcm
from pipeline.room.bands import AUDIBLE, BAND_EDGES_HZ, TINY, Bands, band_energies, echo_ratio
from pipeline.room.clock import MicClock, PopClock
from pipeline.room.delay import estimate_delay, jump_believed
from pipeline.room.heard import HeardLog

log = logging.getLogger(__name__)

PENDING_FRAMES = 8
"""The newest heard frames whose verdict may still change: the gate confirms a user 60-140
ms into their first word, and those first frames were the user too (`learn` claims them
back). They take no part in a delay estimate: a talk-over's unconfirmed onset lining up
with the reply's start, over a silent microphone, once gave a delay and reset the loss to
its cautious start, and the talk-over was then taken for our echo (test_webrtc, loaded
2-core box: no barge-in)."""
EARLY_FRAMES = 10
EARLY_PERCENTILE = 90.0
EARLY_MARGIN_DB = 3.0
"""Once the delay is known, 10 frames (0.2 s) at it give a provisional loss, 3 dB over
their 90th percentile, until the usual 35: the cautious start (the echo as loud as what
was played) is deaf to a user no louder than the reply, and it lasted ~0.7 s past the
delay. A session's first reply talked over 0.6-1.5 s in, an echo 10 dB down (offline, 4
replies x 2 delays x plain/reverberant): held after a median 460 → 360 ms of speech, 25 →
37 of 80 within 300 ms; the echo alone, 0 to -10 dB, 0.16-0.5 s, plain or reverberant (96
replies), confirmed no speech either way. Only for a session's first delay: one that
replaced a believed delay may be a chance one (background talk), and 0.2 s of frames at
it are no proof."""
ESTIMATE_EVERY = 10
ESTIMATE_EVERY_UNKNOWN = 5
"""Frames between delay estimates: 200 ms, and 100 ms while the delay is unknown (each
estimate's correlations are smoothed with the ones before, so in background talk the
right delay stood out only after several). A session's first reply talked over in
background talk 15 dB down (`make echo-probe`, paired, 80 talk-overs 0.6-1.5 s after the
echo was first heard): held within 300 ms of speech in 42 → 58 and 48 → 67 of 80 (two
runs), 1.0 s in: median 640 → 160 ms; the echo alone, with or without the talk, confirmed
no more speech than before."""
NOTHING_BACK = 1e-4
NOTHING_BACK_FRAMES = 10
"""When every frame learned from so far heard under a 10,000th (-40 dB) of what was
played (headphones, a client that cancels its echo, a bench client), 10 frames (0.2 s)
are enough to stop assuming a loud echo. Otherwise a user talking over the first 1.7 s
of a session's first reply was taken for our echo (test_webrtc: no barge-in at all in 2
of 8 tries 1.4 s into the reply)."""


@dataclass(frozen=True)
class Echo:
    """How much of one microphone frame our own playback explains (mean-square energies)."""

    near: float
    """The frame's energy."""
    echo: float
    """The echo predicted in it (margin included); 0 when nothing was played lately."""
    residual: float
    """Energy the prediction does not explain, summed over bands: someone else."""

    @property
    def residual_db(self) -> float:
        return dbfs(self.residual)

    @property
    def explained(self) -> bool:
        """Mostly our own voice: the residual is smaller than the echo predicted."""
        return self.residual < self.echo


class EchoGuard:
    """Predicts the echo of played audio in the microphone. Not thread-safe; ~0.1 ms a frame.

    Call `played` for every frame the transport sends (its time of leaving), `hear` for
    every microphone frame, then `learn` with the gate's verdict on that frame.
    """

    def __init__(self, *, max_delay_s: float = 1.0, margin_db: float = 3.0,
                 smear_s: float = 0.04, history: int = 150, min_history: int = 35,
                 start_db: float = 0.0) -> None:
        self.max_delay_s = max_delay_s
        self.margin = 10 ** (margin_db / 10)
        self.smear_s = smear_s
        self.delay_s: float | None = None
        """The estimated delay from playing to hearing, once the envelopes agree."""
        self._far_t: deque[float] = deque(maxlen=int((max_delay_s + 3.5) * 1000 / FRAME_MS))
        self._far: deque[Bands] = deque(maxlen=self._far_t.maxlen)
        self._far_peak = np.zeros(len(BAND_EDGES_HZ) - 1)
        self._mic = MicClock()
        self._heard = HeardLog(150, PENDING_FRAMES)
        """The user's frames are kept out of the delay estimate: a talk-over must not
        teach the guard a wrong delay."""
        self._ratios: deque[Bands] = deque(maxlen=history)
        self._min_history = min_history
        self._gain = np.full(len(BAND_EDGES_HZ) - 1, 10 ** (start_db / 10))
        """The loss per band: from `start_db` (0: as loud as what was played; a client that
        cancels its own echo starts lower) until learned. A delay found starts it at 0."""
        self._frames = 0
        self._last: tuple[Bands, Bands] | None = None
        self._pops = PopClock()
        self._candidate: float | None = None
        """The last estimate of the delay: one is believed only when the next agrees."""
        self._run = 0
        """Estimates in a row that agreed with the candidate."""
        self._gain_known = False
        """The loss has been learned (not the cautious start)."""
        self._scores: npt.NDArray[np.float64] | None = None
        """The delay estimates' smoothed correlations per lag (pipeline.room.delay)."""
        self._audible_since: float | None = None
        """When this run of playing first played something audible."""
        self._quiet: list[Bands] | None = None
        """This run of playing's frames so far, while none heard anything (`_hear_quiet`)."""
        self._run_start = 0.0
        self._heard_t = 0.0
        self._last_audible = -1e9
        """When something audible was last played: no delay is estimated once nothing
        played can echo any more (after a reply, in background talk, the correlation found
        0.96 s instead of 0.32 three times in a row; the loss learned at it let our echo
        cut the next reply)."""
        self._moved = False
        """A believed delay gave way to another: no provisional loss (`_early_gain`) since."""
        self._learned: deque[bool] = deque(maxlen=PENDING_FRAMES)
        """Per recent frame: `learn` took a ratio from it (given back if it was the user)."""

    def live(self, t: float) -> bool:
        """Played frames are being played into a room at `t` (not drained in a burst)."""
        return self._pops.live(t)

    @property
    def nothing_comes_back(self) -> bool:
        """What was learned says no echo comes back at all (every band NOTHING_BACK down:
        headphones, a client that cancels its own echo); False until something is learned."""
        return bool(np.all(self._gain < NOTHING_BACK))

    @property
    def gain_db(self) -> Bands:
        """The learned loss per band, played → heard (0 dB until learned)."""
        return np.asarray(10 * np.log10(np.maximum(self._gain, TINY)))

    def played(self, pcm: Pcm, t: float) -> None:
        """A frame left for the loudspeaker at `t` (silence need not be reported).

        Frames taken much faster than real time (a transport draining the queue at once)
        are not being played into a room: the guard then stands down (PopClock)."""
        if self._pops.pop(t):
            self._far_t.clear()
            self._far.clear()
        if not self._pops.live(t):
            return
        bands = band_energies(pcm)
        if not self._far_t or t - self._far_t[-1] > 0.1:
            self._run_start = t  # playing starts (again) after a pause
            self._quiet, self._audible_since = [], None
        if bands.sum() >= AUDIBLE:
            self._last_audible = t
            if self._audible_since is None:
                self._audible_since = t
        self._far_t.append(t)
        self._far.append(bands)
        self._far_peak = np.maximum(self._far_peak * 0.995, bands)

    def hear(self, near: Bands, t: float) -> Echo:
        """The echo in a microphone frame whose last sample arrived at `t`."""
        t = self._mic.tick(t)
        total = float(near.sum())
        self._heard.add(t, near)
        self._frames += 1
        every = ESTIMATE_EVERY if self.delay_s is not None else ESTIMATE_EVERY_UNKNOWN
        if self._frames % every == 0 and t - self._last_audible <= self.max_delay_s + self.smear_s:
            self._estimate_delay()  # only while something played can still echo
        far = self._far_at(t)
        if far is None:
            self._last = None
            return Echo(total, 0.0, total)
        predicted = far * self._gain * self.margin
        # Until the delay is known, a frame teaches the loss only once playing has gone on
        # for longer than any delay: before that its echo may not have arrived yet. (Where
        # no echo ever comes back — headphones, a client that cancels it — no delay is
        # found, and this is how the guard learns there is nothing to discount.)
        settled = self.delay_s is not None or t - self._run_start >= self.max_delay_s
        self._heard_t = t
        self._last = (near, far) if settled else None
        self._hear_quiet(near, far, t)
        residual = float(np.maximum(near - predicted, 0.0).sum())
        return Echo(total, float(predicted.sum()), residual)

    def learn(self, *, user: bool) -> None:
        """Learn the loss from the last heard frame, unless the gate took it as the user
        (then the frames just before it, up to PENDING_FRAMES, were the user too)."""
        if user and self._heard.mark_user():
            self._give_back()
        learned = False
        if self._last is not None and not user:
            learned = self._learn_ratio(*self._last)
        self._learned.append(learned)

    def _hear_quiet(self, near: Bands, far: Bands, t: float) -> None:
        """Until this run of playing has been audible for max_delay_s: keep the ratio of
        each frame that heard nothing of it. If none heard anything, the echo of any delay
        up to max_delay_s would have come already: nothing comes back (`_learn_quiet`)."""
        if self._quiet is None or self._gain_known or self._audible_since is None:
            return
        if t - self._audible_since >= self.max_delay_s:
            self._learn_quiet()
            return
        ratio = echo_ratio(near, far, self._far_peak)
        if ratio is None:
            return
        if np.nanmax(ratio) < NOTHING_BACK:
            self._quiet.append(ratio)
        else:
            self._quiet = None  # something was heard: the loss is learned as usual

    def _learn_quiet(self) -> None:
        """The run heard nothing for max_delay_s: learned at once, not NOTHING_BACK_FRAMES
        later. (A user talking over a session's first reply with headphones 1.0-1.2 s in
        was taken for our echo, and then learned as it: no barge-in in that reply.)"""
        assert self._quiet is not None
        if len(self._quiet) >= NOTHING_BACK_FRAMES:
            self._ratios.extend(self._quiet)
            self._update_gain()
        self._quiet = None

    def _give_back(self) -> None:
        """The user's first frames, before the gate confirmed them: not our echo."""
        given_back = sum(self._learned)
        for _ in range(min(given_back, len(self._ratios))):
            self._ratios.pop()
        self._learned.clear()
        if given_back and self._ratios and self._gain_known:
            self._update_gain(enough=len(self._ratios))  # as learned without them
        elif given_back and not self._gain_known and self._ratios:
            self._early_gain(np.stack(self._ratios), least=EARLY_FRAMES // 2)  # without them

    def _learn_ratio(self, near: Bands, far: Bands) -> bool:
        ratio = echo_ratio(near, far, self._far_peak)
        if ratio is None:  # silence played proves nothing
            return False
        self._ratios.append(ratio)
        self._update_gain()
        return True

    def _learn_back(self) -> None:
        """The delay is first known: learn the loss from the frames already heard at it
        (not the user's, nor the newest PENDING_FRAMES, which may yet be). Learning only
        from the frames after it, EARLY_FRAMES of them, a user who spoke then was learned as
        our echo (a session's first reply talked over 0.76 s in, echo -10 dB: held after
        0.6-1 s; `make echo-probe`, paired: within 300 ms of speech 75 → 80 of 80, and 59
        → 76 with background talk 15 dB down; the echo alone confirmed no more speech)."""
        for t, near in self._heard.settled_ours():
            far = self._far_at(t)
            ratio = None if far is None else echo_ratio(near, far, self._far_peak)
            if ratio is not None:
                self._ratios.append(ratio)
        self._learned = deque([False] * len(self._learned), maxlen=PENDING_FRAMES)
        if self._ratios:
            log.debug("echo guard: %d frames heard at the delay", len(self._ratios))
            self._update_gain()

    def _update_gain(self, enough: int | None = None) -> None:
        stacked = np.stack(self._ratios)
        if enough is None:
            enough = self._min_history
            audible = self._audible_since
            if (len(self._ratios) < enough and np.nanmax(stacked) < NOTHING_BACK
                    and audible is not None and self._heard_t - audible >= self.max_delay_s):
                # Nothing comes back at all: no need to wait. Not before playing has been
                # audible for longer than any delay: a transport that reports the silence
                # it plays taught it from a reply's first frames, before their echo came.
                enough = NOTHING_BACK_FRAMES
        if len(self._ratios) < enough:
            self._early_gain(stacked)
            return
        counted = np.sum(~np.isnan(stacked), axis=0) >= enough // 2
        p90 = np.nanpercentile(np.where(counted, stacked, 1.0), 90, axis=0)
        was_nothing = self.nothing_comes_back
        self._gain = np.where(counted, np.minimum(p90, 10.0), self._gain)
        if not self._gain_known:
            log.debug("echo guard: loss %s dB from %d frames",
                      np.round(self.gain_db).astype(int).tolist(), len(stacked))
        self._gain_known = True
        if self.nothing_comes_back != was_nothing:
            log.debug("echo guard: %s", "nothing comes back" if not was_nothing
                      else "an echo comes back after all")

    def _early_gain(self, stacked: npt.NDArray[np.float64], least: int | None = None) -> None:
        """Before enough frames: once the delay is known, EARLY_FRAMES give a provisional
        loss, EARLY_MARGIN_DB over their EARLY_PERCENTILE, never above the cautious start
        (as loud as what was played). A talk-over's onset given back may leave fewer: the
        loss is then recomputed from those left (`least`), not put back to the cautious
        start."""
        least = EARLY_FRAMES if least is None else least
        if (self.delay_s is None or self._gain_known or self._moved
                or len(stacked) < least):
            return
        counted = np.sum(~np.isnan(stacked), axis=0) >= least // 2
        high = np.nanpercentile(np.where(counted, stacked, 1.0), EARLY_PERCENTILE, axis=0)
        early = np.minimum(high * 10 ** (EARLY_MARGIN_DB / 10), 1.0)
        cautious = bool(np.all(self._gain == 1.0))
        self._gain = np.where(counted, early, 1.0)
        if cautious:
            log.debug("echo guard: provisional loss %s dB from %d frames",
                      np.round(self.gain_db).astype(int).tolist(), len(stacked))

    def _far_at(self, t: float) -> Bands | None:
        """The loudest played bands that can be echoing at `t`: around t - delay once it
        is known, else anywhere in the last max_delay_s."""
        if not self._far_t or t - self._far_t[-1] > self.max_delay_s + self.smear_s:
            return None
        times = np.fromiter(self._far_t, float)
        if self.delay_s is None:
            near = (times >= t - self.max_delay_s - self.smear_s) & (times <= t)
        else:
            near = np.abs(times - (t - self.delay_s)) <= self.smear_s
        if not near.any():
            return None
        far = np.stack(self._far)[near]
        return np.asarray(far.max(axis=0))

    def _estimate_delay(self) -> None:
        """Cross-correlate the heard envelope with the played one (pipeline.room.delay)."""
        if len(self._heard) < 50 or len(self._far_t) < 25:
            return
        heard = self._heard.settled()
        far_db = 10 * np.log10(np.maximum(np.stack(self._far).sum(axis=1), TINY))
        found = estimate_delay(heard, np.fromiter(self._far_t, float), far_db,
                               self.max_delay_s, nothing_back_db=-10 * np.log10(NOTHING_BACK),
                               earlier=self._scores)
        if found is not None:
            self._scores = found.scores
            if found.delay_s is not None:
                self._believe(found.delay_s, found.scores)

    def _believe(self, delay: float, scores: npt.NDArray[np.float64]) -> None:
        """An estimate of `delay` (`scores`: the correlation at each lag): believed once
        the next agrees; a jump from a believed delay only per `jump_believed`."""
        agreed = self._candidate is not None and abs(delay - self._candidate) <= FRAME_MS / 1000
        self._candidate = delay
        self._run = self._run + 1 if agreed else 1
        if not agreed:
            return  # a first estimate (or a jump) waits for the next one to agree
        best = float(scores.max())
        if self.delay_s is not None and abs(delay - self.delay_s) > self.smear_s:
            believed = float(scores[round(self.delay_s * 1000 / FRAME_MS)])
            if not jump_believed(self._run, best, believed):
                return  # the believed delay still explains the echo about as well
        if self.delay_s is None or abs(delay - self.delay_s) > self.smear_s:
            log.debug("echo guard: delay %.2f s (was %s), correlation %.2f", delay,
                      self.delay_s, best)
            # The loss was learned against other played frames: start cautious again.
            self._moved = self.delay_s is not None
            self._ratios.clear()
            self._gain = np.ones(len(BAND_EDGES_HZ) - 1)
            self._gain_known = False
        first = self.delay_s is None
        self.delay_s = delay
        if first:
            self._learn_back()
