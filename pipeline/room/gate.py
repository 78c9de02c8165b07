"""The room gate: is this frame the user talking to us, or the room?

webrtcvad answers "is there a voice", which in a room is also the people behind the user,
the television and our own reply coming back. The gate adds what a listener uses:

- our echo cancelled first (pipeline.room.cancel), where one comes back;
- conditioning: noise suppression, where the client did not do it (a flag per
  stream: on for raw audio, off when the browser says it did);
- our own echo discounted (pipeline.room.echo): what the prediction of our playback
  explains is not the user;
- the room's level (pipeline.room.levels.RoomLevel) and the user's (TalkerLevel);
- a neural VAD's opinion (Silero, models/silero.py), when one is given.

It gives two verdicts per frame. *confirmed* (strict) decides whether a turn starts,
resumes after a pause, or interrupts a reply: a voice clearly above the room's usual
peaks, not explained by our echo, near the user's own level, that the neural VAD also
calls speech. *voiced* (lenient) decides whether a turn goes on: a voice above the room's
median that is not mostly echo. Once someone has the floor, their quieter syllables keep
it; background talk does not get it.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pipeline.audio import dbfs
from pipeline.events import FRAME_MS, Pcm
from pipeline.room.bands import band_energies
from pipeline.room.cancel import Cancellation, EchoCanceller
from pipeline.room.conditioning import Conditioner, Suppression, condition
from pipeline.room.echo import Echo, EchoGuard
from pipeline.room.levels import UNKNOWN_DB, NoisyRoom, RoomLevel, TalkerLevel, quiet_pre_roll
from pipeline.room.options import RoomOptions, Stream
from pipeline.timeline import now

log = logging.getLogger(__name__)

IDLE_WAIT_FRAMES = 15
"""Frames (300 ms, more than a start window) an idle frame waits before it joins the room."""

EARLY_MARGIN_DB = 18.0
EARLY_MIN_FRAMES = 3
"""Before the room is known, a start must stand this far above the quietest tenth of the
frames heard so far (at least this many)."""
EARLY_FRAMES_KEPT = 1500
"""How many of those frames are kept (30 s, the longest utterance): all of them, so a long
first utterance is still measured against the quiet before it, not against its own words."""
QUIET_DB = -50.0
"""A stream whose frames so far were typically this quiet has no talk in its room."""

SpeechProbability = Callable[[Pcm], float]
"""A neural VAD fed every 20 ms frame of one stream: the probability it is speech."""


@dataclass(frozen=True)
class Heard:
    """The gate's verdicts on one frame."""

    voiced: bool
    """The user (or whoever has the floor) goes on speaking."""
    confirmed: bool
    """Strong enough to start a turn, resume one, or interrupt a reply."""
    level_db: float
    """The frame's level above 100 Hz, our predicted echo taken out."""
    resumes: bool = False
    """Enough to resume a paused turn: confirmed, or a voice louder than the room's talk
    gets (a quiet room: the user's next soft word, which the strict check may doubt)."""
    echo: bool = False
    """Mostly our own playback coming back (the echo guard explains the frame)."""


class Room:
    """One stream's gate. Not thread-safe; ~0.1-0.2 ms a frame with Silero, on the loop."""

    def __init__(self, options: RoomOptions | None = None, *,
                 conditioner: Conditioner | None = None,
                 speech_probability: SpeechProbability | None = None,
                 stream: Stream | None = None, gain: Conditioner | None = None,
                 canceller: EchoCanceller | None = None) -> None:
        self.options = options or RoomOptions()
        self.cancellation = (Cancellation(canceller)
                             if canceller is not None and self.options.echo_cancel else None)
        """Our echo taken out of each frame first (None: no canceller given, or off)."""
        self._raw_echo = (EchoGuard(max_delay_s=self.options.max_echo_delay_s)
                          if self.cancellation is not None else None)
        """The echo guard of the audio as it came, before cancellation: where it learns
        that nothing comes back, the canceller's output is not used (module docstring)."""
        self.stream = stream or Stream()
        self.conditioning = self.options.conditioning and not self.stream.processed
        """Per stream: False when the client says it suppressed noise itself."""
        self._conditioner = conditioner
        self._gain = gain if self.conditioning else None
        """The automatic gain on what the recognizer hears (RoomOptions.gain_dbfs)."""
        self.suppression = Suppression()
        """Whether the conditioner's output is used: in a noisy room (or always_suppress)."""
        self._speech = speech_probability
        self.echo = EchoGuard(max_delay_s=self.options.max_echo_delay_s,
                              margin_db=self.options.echo_margin_db,
                              start_db=(self.options.echo_cancelled_db
                                        if self.stream.echo_cancelled else 0.0))
        self.room = RoomLevel(min_frames=25)
        self.talker = TalkerLevel()
        self.noisy = NoisyRoom()
        """Whether to hear this stream with the noisy-room ear (where there is one)."""
        self._idle: deque[tuple[float, float] | None] = deque(maxlen=IDLE_WAIT_FRAMES)
        self._early: deque[float] = deque(maxlen=EARLY_FRAMES_KEPT)
        self._early_idle: deque[float] = deque(maxlen=50)
        """The same, while nobody had the floor: how quiet the stream was before a voice."""
        self._since = 1 << 30
        """Frames since the last confirmed one."""

    def played(self, pcm: Pcm, t: float | None = None) -> None:
        """A frame of our own audio left for the loudspeaker at `t` (default: now; the
        Speaker's tap)."""
        if not self.stream.hears_us:
            return
        t = now() if t is None else t
        if self.options.echo:
            self.echo.played(pcm, t)
        if self.cancellation is not None and self._raw_echo is not None:
            self._raw_echo.played(pcm, t)
            if self._raw_echo.live(t):
                self.cancellation.played(pcm)
            else:  # drained in a burst (a transport taking frames faster than they play)
                self.cancellation.forget()

    def condition(self, pcm: Pcm, t: float | None = None) -> Pcm:
        """The frame (whose last sample arrived at `t`, default now) with our echo taken out
        where one comes back, then noise suppression if this stream needs it."""
        if self.cancellation is not None and self._raw_echo is not None:
            cancelled = self.cancellation.cancel(pcm)
            self._raw_echo.hear(band_energies(pcm), now() if t is None else t)
            if not self._raw_echo.nothing_comes_back:
                pcm = cancelled
        if self._conditioner is None or not self.conditioning:
            return pcm
        self.suppression.hear(pcm)
        suppressed = condition(self._conditioner, pcm)
        return suppressed if self.suppression.on or self.options.always_suppress else pcm

    def pre_roll(self, frames: list[Pcm]) -> list[Pcm]:
        """A turn's pre-roll as the recognizer gets it: the room before the first frame
        that could start a turn turned down (RoomOptions.quiet_pre_roll), once the room
        is known."""
        options = self.options
        if not options.enabled or not options.quiet_pre_roll or not self.room.known:
            return frames
        return quiet_pre_roll(frames, self.room.peak_db + options.start_margin_db,
                              options.pre_roll_keep_ms // FRAME_MS)

    def for_ear(self, pcm: Pcm) -> Pcm:
        """A judged frame as the recognizer gets it: raised by the automatic gain, if any
        (fed every frame, so its gain follows the stream)."""
        return pcm if self._gain is None else condition(self._gain, pcm)

    def judge(self, pcm: Pcm, t: float, voiced: bool, *, in_utterance: bool) -> Heard:
        """Verdicts on a (conditioned) frame that webrtcvad called `voiced` or not;
        `in_utterance`: someone has the floor (the endpointer is not idle)."""
        near = band_energies(pcm)
        total = float(near.sum())
        echo = self.echo.hear(near, t) if self.options.echo else Echo(total, 0.0, total)
        level = echo.residual_db
        probability = self._speech(pcm) if self._speech is not None else 1.0
        if not self.room.known:
            self._early.append(level)
            if not in_utterance:
                self._early_idle.append(level)
        going_on = voiced and self._goes_on(level, echo)
        confirmed = going_on and self._starts(level, echo, probability, t, in_utterance)
        # Counted in frames, not on the clock: `apace talk --fast` feeds them faster.
        self._since = 0 if confirmed else self._since + 1
        since = self._since * FRAME_MS / 1000
        if (not confirmed and in_utterance and since > self.options.hold_s
                and not self._above_room(level)):
            going_on = False  # nothing like the user for a while: the room is talking
        elif (not confirmed and in_utterance and since <= self.options.tail_s and voiced
              and not echo.explained):
            going_on = True  # a word's soft end, under the room's level but still voiced
        self.echo.learn(user=confirmed or (in_utterance and going_on))
        if self._raw_echo is not None:
            self._raw_echo.learn(user=confirmed or (in_utterance and going_on))
        self._hear_room(dbfs(echo.near), echo, in_utterance)
        if in_utterance and confirmed:
            self.talker.speech(level)
        resumes = confirmed or (voiced and not echo.explained and self._above_room(level))
        if not in_utterance and self._conditioner is not None:
            self.suppression.decide()
        return Heard(going_on, confirmed, level, resumes, echo=bool(echo.echo) and echo.explained)

    def _hear_room(self, level: float, echo: Echo, in_utterance: bool) -> None:
        """The room is what is heard while nobody has the floor, our echo aside. A frame
        joins it only once it is clear it did not start an utterance (a start window
        later): the first syllables of a turn are not the room."""
        if in_utterance:
            self._idle.clear()
            return
        mostly_echo = echo.echo > 0.25 * echo.near
        self._idle.append(None if mostly_echo else (level, self.suppression.raw_db))
        if len(self._idle) == self._idle.maxlen:
            oldest = self._idle.popleft()
            if oldest is not None:
                self.room.hear(oldest[0])
                self.suppression.room.hear(oldest[1])

    def snr_db(self, t: float) -> float | None:
        """The user's level over the room's median (None until both are known)."""
        user = self.talker.level_db(t)
        if not self.room.known or user <= UNKNOWN_DB:
            return None
        return user - self.room.median_db

    def noisy_ear(self, t: float) -> bool:
        """Hear what is said now with the noisy-room ear (levels.NoisyRoom)."""
        if not self.options.enabled:
            return False
        was, snr = self.noisy.noisy, self.snr_db(t)
        if self.noisy.decide(snr) != was:
            log.info("the user is %.0f dB over the room: %s", snr,
                     "a noisy room (the noisy-room ear)" if not was else "a quiet room again")
        return self.noisy.noisy

    def close(self) -> None:
        """The stream ended: free the canceller (idempotent)."""
        if self.cancellation is not None:
            self.cancellation.close()

    def utterance_ended(self, t: float) -> None:
        """The endpointer ended an utterance: learn the user's level from it."""
        self.talker.utterance_ended(t)

    def _stands_out(self, level: float) -> bool:
        """Before the room is known (its first ~0.8 s), on a stream whose speech may come
        at once: a voice starts a turn when it stands EARLY_MARGIN_DB above the quietest
        of what was heard so far: a talker's first word rises out of a pause. (Talk in the
        room can rise out of a lull too: that is why only such streams do this.)"""
        if len(self._early) < EARLY_MIN_FRAMES:
            return False
        return level >= float(np.percentile(np.fromiter(self._early, float), 10)) + EARLY_MARGIN_DB

    def _early_start(self, level: float) -> bool:
        """Before the room is known: a voice may start a turn on a stream whose speech may
        come at once, or on any stream that has been quiet so far (its typical frame well
        under a voice: talk in the room from the first frame is not), when it rises out
        of the quietest of what was heard (a client that speaks right after it connects:
        0.3 s after `ready`, the room was not yet known and the question went unheard)."""
        if not (self.stream.speech_at_once or self._quiet_so_far()):
            return False
        return self._stands_out(level)

    def _quiet_so_far(self) -> bool:
        return (len(self._early_idle) >= EARLY_MIN_FRAMES
                and float(np.median(np.fromiter(self._early_idle, float))) <= QUIET_DB)

    def _above_room(self, level: float) -> bool:
        """Louder than the room's talk ever gets: whatever it is, it is not the room. The
        soft end of a word ("France": 0.3 s of fricative 20-40 dB under the vowels, that
        the neural VAD doubts) goes on in a quiet room; in background talk it cannot be
        told from the room, and the hold decides. Before the room is known, on a stream
        that may speak at once, the same as a start: well out of the quietest of what was
        heard (Realtime test: "France" cut, the reply 0.12 s after the real end of speech)."""
        if not self.room.known:
            return self._early_start(level)
        return level >= self.room.peak_db + self.options.start_margin_db

    def _goes_on(self, level: float, echo: Echo) -> bool:
        if echo.echo and echo.residual < 0.5 * echo.echo:
            return False
        return level >= self.room.median_db + self.options.continue_margin_db

    def _starts(self, level: float, echo: Echo, probability: float, t: float,
                in_utterance: bool) -> bool:
        """The strict check. Inside an utterance the user's level is asked less strictly
        (`resume_range_db`): the end of a question is often its quietest part."""
        options = self.options
        if echo.echo and echo.explained:
            return False
        if not self.room.known:
            if not self._early_start(level):
                return False
        elif level < self.room.peak_db + options.start_margin_db:
            return False
        user = self.talker.level_db(t)
        below = options.resume_range_db if in_utterance else options.user_range_db
        if user > UNKNOWN_DB and level < user - below:
            return False
        return probability >= options.speech_probability
