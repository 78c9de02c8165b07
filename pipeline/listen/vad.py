"""Endpointer: webrtcvad per 20 ms frame, then a small state machine.

    idle ──(start_ms of voice in a short window)──► speaking ──(onset_ms silent)──► pausing
    pausing ──(resume_ms of voice)──► speaking       pausing ──(endpoint silence)──► idle

`SilenceOnset` is tentative (the reply may be prepared but not played); `Endpoint` is final.
The state machine is plain synchronous code: feed it frames and a voiced/unvoiced verdict.

Starting is stricter than going on. With a `Room` (pipeline.room), each frame gets two
verdicts: *confirmed* starts a turn, resumes one after a pause, and counts toward a
barge-in (`confirmed_ms`); *voiced* keeps a turn going. Without one, both are webrtcvad's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import numpy as np

from pipeline.audio import rms_dbfs
from pipeline.events import (
    FRAME_MS,
    SAMPLE_RATE,
    AudioFrame,
    Endpoint,
    Pcm,
    SilenceOnset,
    SpeechResumed,
    SpeechStarted,
    VadEvent,
)
from pipeline.room import Room

LEVEL_DECAY_DB = 0.5
"""How fast the tracked speech level falls per voiced frame (20 ms): 25 dB/s."""
LATE_VOICE_MS = 60
"""Voice this long after a silence onset, even if it does not resume the turn, makes a
transcript made at the onset stale (Endpoint.voice_after_onset; the Wyoming transport
checks the same on webrtcvad alone): soft last words the room gate doubts are still heard
("How many centimeters are in" would lose "a meter"; docs/rooms.md)."""
MAX_LATE_ONSETS = 3
"""Onsets raised again in one pause when late voice stops (SilenceOnset.again), so the
turn is heard again during the pause rather than at the endpoint; after these the endpoint
says `voice_after_onset` instead (each onset costs a transcription, and background talk can
start and stop many times a second)."""


@dataclass(frozen=True, kw_only=True)
class VadOptions:
    """How the endpointer decides. All durations in milliseconds. Why the defaults are what
    they are: docs/latency.md."""

    aggressiveness: int = 2
    """webrtcvad mode 0-3: higher rejects more non-speech (and some soft speech)."""
    start_ms: int = 100
    """Voiced audio within `start_window_ms` that counts as the start of speech."""
    start_window_ms: int = 200
    pre_roll_ms: int = 300
    """Audio kept from before the detected start, so the first syllable is not clipped."""
    onset_ms: int = 60
    """Silence after speech that raises a tentative `SilenceOnset`, where speculation
    starts (default 60)."""
    endpoint_ms: int = 500
    """Silence after speech that ends the turn (the hangover). Adjustable per turn."""
    resume_ms: int = 60
    """Voiced audio after an onset that counts as the user speaking again."""
    speech_floor_db: float = 35.0
    """A frame webrtcvad calls voiced but this many dB below the utterance's speech level
    is silence, so speech ends where it fades (default 35; 0: off)."""
    max_utterance_s: float = 30.0
    """An utterance this long is ended even without a pause."""

    def __post_init__(self) -> None:
        if self.aggressiveness not in (0, 1, 2, 3):
            raise ValueError(f"vad aggressiveness must be 0-3, got {self.aggressiveness}")
        for name in ("start_ms", "start_window_ms", "onset_ms", "endpoint_ms", "resume_ms"):
            value = getattr(self, name)
            if value < FRAME_MS or value % FRAME_MS:
                raise ValueError(f"vad {name} must be a positive multiple of {FRAME_MS} ms")
        if self.start_ms > self.start_window_ms:
            raise ValueError("vad start_ms cannot exceed start_window_ms")
        if not 0 <= self.speech_floor_db <= 90:
            raise ValueError(f"vad speech_floor_db must be 0-90 dB, got {self.speech_floor_db}")
        if self.onset_ms >= self.endpoint_ms:
            raise ValueError("vad onset_ms must be shorter than endpoint_ms")


class _State(Enum):
    IDLE = "idle"
    SPEAKING = "speaking"
    PAUSING = "pausing"


class Endpointer:
    """Turns 20 ms frames into speech events. Not thread-safe; cheap enough for the loop."""

    def __init__(
        self, options: VadOptions | None = None, classify: Callable[[Pcm], bool] | None = None,
        room: Room | None = None,
    ) -> None:
        self.options = options or VadOptions()
        self._classify = classify or webrtc_classifier(self.options.aggressiveness)
        self.room = room
        self.heard: Pcm = np.zeros(0, np.int16)
        """The last frame pushed as it was heard: conditioned, with a room that does it."""
        enabled = room is not None and room.options.enabled
        self._min_turn_ms = room.options.min_turn_ms if room is not None and enabled else 0
        self._resume_ms = max(self.options.resume_ms,
                              room.options.resume_ms if room is not None and enabled else 0)
        # The strict start (Silero must agree) comes later into a word than webrtcvad's: the
        # first word's onset would fall before the pre-roll ("Which planet" → "Each planet").
        self._pre_roll_ms = self.options.pre_roll_ms + (
            room.options.start_lag_ms if room is not None and enabled else 0)
        self.endpoint_ms = self.options.endpoint_ms
        self._window: deque[tuple[AudioFrame, bool]] = deque(
            maxlen=max(self._pre_roll_ms, self.options.start_window_ms) // FRAME_MS
        )
        self._state = _State.IDLE
        self._utterance: list[Pcm] = []
        self._level = -120.0
        self._since_confirmed = 1 << 30
        self.unheard: Endpoint | None = None
        """The last utterance that ended unheard (too little confirmed speech to be a turn:
        the room, or a short word said over a reply), until `take_unheard`."""
        self._reset()

    def take_unheard(self) -> Endpoint | None:
        """The utterance that last ended unheard, once (pipeline.turn.talk_over hears it if it
        held a reply)."""
        unheard, self.unheard = self.unheard, None
        return unheard

    @property
    def speaking(self) -> bool:
        """True from speech start until the endpoint (pauses included)."""
        return self._state is not _State.IDLE

    @property
    def voiced_ms(self) -> int:
        """Voiced audio in the current utterance so far (for sustained-speech checks)."""
        return self._voiced_frames * FRAME_MS

    @property
    def confirmed_ms(self) -> int:
        """Audio in the current utterance that passed the strict (start) check: what a
        barge-in must reach. Without a room, the same as `voiced_ms`."""
        return self._confirmed_frames * FRAME_MS

    @property
    def since_confirmed_ms(self) -> int:
        """How long since the last confirmed frame, in a turn or before one: voice the
        gate doubts (our echo under a word, the room) does not count."""
        return self._since_confirmed

    @property
    def silent_ms(self) -> int:
        """Silence since the last voiced frame of the current utterance (0 while voiced)."""
        return self._silent_ms

    @property
    def pausing(self) -> bool:
        """True between a silence onset and the endpoint (or resumed speech)."""
        return self._state is _State.PAUSING

    @property
    def utterance_s(self) -> float:
        """Length of the current utterance so far, pre-roll included."""
        return len(self._utterance) * FRAME_MS / 1000

    def utterance(self) -> Pcm:
        """The current utterance's audio so far (for live captions)."""
        return self._audio()

    def push(self, frame: AudioFrame) -> list[VadEvent]:
        """Classify one frame and advance; returns the events it caused (usually none).
        With a room, the frame is conditioned first and its audio is what is kept."""
        room = self.room
        if room is None or not room.options.enabled:
            self.heard = frame.pcm
            voiced = self._classify(frame.pcm)
            if voiced and self.options.speech_floor_db:
                voiced = self._above_floor(rms_dbfs(frame.pcm))
            return self.advance(frame, voiced)
        pcm = self.heard = room.condition(frame.pcm, frame.t)
        if pcm is not frame.pcm:
            frame = AudioFrame(pcm, frame.t)
        heard = room.judge(pcm, frame.t, self._classify(pcm), in_utterance=self.speaking)
        voiced = heard.voiced
        if voiced and self.options.speech_floor_db:
            voiced = self._above_floor(rms_dbfs(pcm))
        ear = room.for_ear(pcm)
        if heard.echo and not self.speaking:
            # Our own reply coming back, before anyone has the floor: the pre-roll of a
            # turn that starts over it must not hand Whisper our words ("By the sea, how
            # many cups…" for a question asked over the story's end). Silence instead.
            ear = np.zeros_like(pcm)
        if ear is not pcm:
            frame = AudioFrame(ear, frame.t)
        events = self.advance(frame, voiced, confirmed=voiced and heard.confirmed,
                              resumes=voiced and heard.resumes)
        if any(isinstance(event, Endpoint) for event in events):
            room.utterance_ended(frame.t)
        return events

    def _above_floor(self, level: float) -> bool:
        """Track the utterance's speech level (a peak that decays 25 dB/s of voice) and
        say whether a voiced frame at `level` is loud enough to be speech."""
        self._level = max(level, self._level - LEVEL_DECAY_DB)
        return bool(level >= self._level - self.options.speech_floor_db)

    def advance(self, frame: AudioFrame, voiced: bool, confirmed: bool | None = None,
                resumes: bool | None = None) -> list[VadEvent]:
        """Advance the state machine with a frame already classified: `voiced` keeps a
        turn going, `confirmed` (default: `voiced`) starts one and counts toward a
        barge-in, `resumes` (default: `confirmed`) resumes one after its silence onset."""
        confirmed = voiced if confirmed is None else confirmed
        resumes = confirmed if resumes is None else resumes
        self._since_confirmed = 0 if confirmed else self._since_confirmed + FRAME_MS
        if self._state is _State.IDLE:
            return self._idle(frame, confirmed)
        self._utterance.append(frame.pcm)
        if voiced:
            self._voiced_frames += 1
        if confirmed:
            self._confirmed_frames += 1
        events: list[VadEvent] = []
        if self._state is _State.SPEAKING:
            if voiced:
                self._last_voiced = frame.t
                self._silent_ms = 0
            else:
                self._silent_ms += FRAME_MS
                if self._silent_ms >= self.options.onset_ms:
                    self._state = _State.PAUSING
                    self._resume_frames = self._late_run = self._late_onsets = 0
                    self._voice_after_onset = False
                    # Too little confirmed speech yet to be a turn: pause without telling.
                    self._held = self.confirmed_ms < self._min_turn_ms
                    if not self._held:
                        events.append(SilenceOnset(frame.t, self._last_voiced, self._audio()))
        else:  # PAUSING: a blip of voice does not end the pause; sustained voice does.
            self._silent_ms += FRAME_MS
            events += self._late_voice(frame, voiced)
            # Consecutive voiced frames only: scattered clicks must not add up to a resume.
            self._resume_frames = self._resume_frames + 1 if resumes else 0
            if resumes:
                if self._resume_frames * FRAME_MS >= self._resume_ms:
                    self._state = _State.SPEAKING
                    self._late_run, self._voice_after_onset = 0, False
                    self._last_voiced = frame.t
                    self._silent_ms = 0
                    if not self._held:
                        events.append(SpeechResumed(frame.t))
        if self._state is _State.PAUSING and self._silent_ms >= self.endpoint_ms:
            ended = Endpoint(frame.t, self._last_voiced, self._audio(),
                             voice_after_onset=self._voice_after_onset)
            if self._held:  # a held utterance ends unheard: the room (or a word over a reply)
                self.unheard = ended
            else:
                events.append(ended)
            self._reset()
        elif self._state is not _State.IDLE and self._too_long():
            events.append(Endpoint(frame.t, self._last_voiced, self._audio()))
            self._reset()
        return events

    def _late_voice(self, frame: AudioFrame, voiced: bool) -> list[VadEvent]:
        """Voice in a pause that has not (yet) resumed the turn: LATE_VOICE_MS of it makes
        the last onset's audio stale; when it stops, the onset is raised again with it."""
        if voiced:
            self._late_run += 1
            if self._late_run * FRAME_MS >= LATE_VOICE_MS:
                self._voice_after_onset = True
            return []
        self._late_run = 0
        if not self._voice_after_onset or self._held or self._late_onsets >= MAX_LATE_ONSETS:
            return []
        self._voice_after_onset = False
        self._late_onsets += 1
        return [SilenceOnset(frame.t, self._last_voiced, self._audio(), again=True)]

    def _idle(self, frame: AudioFrame, voiced: bool) -> list[VadEvent]:
        self._window.append((frame, voiced))
        window = list(self._window)[-(self.options.start_window_ms // FRAME_MS) :]
        if sum(v for _, v in window) * FRAME_MS < self.options.start_ms:
            return []
        first_voiced = next(f for f, v in window if v)
        pre_roll = list(self._window)[-(self._pre_roll_ms // FRAME_MS) :]
        self._utterance = [f.pcm for f, _ in pre_roll]
        if self.room is not None:
            self._utterance = self.room.pre_roll(self._utterance)
        self._voiced_frames = self._confirmed_frames = sum(v for _, v in window)
        self._started = first_voiced.t - FRAME_MS / 1000
        self._last_voiced = frame.t if voiced else first_voiced.t
        self._silent_ms = 0
        self._state = _State.SPEAKING
        self._window.clear()
        return [SpeechStarted(self._started)]

    def _too_long(self) -> bool:
        return len(self._utterance) * FRAME_MS / 1000 >= self.options.max_utterance_s

    def _audio(self) -> Pcm:
        return np.concatenate(self._utterance) if self._utterance else np.zeros(0, np.int16)

    def _reset(self) -> None:
        self._state = _State.IDLE
        self._utterance = []
        self._voiced_frames = 0
        self._confirmed_frames = 0
        self._held = False
        self._resume_frames = 0
        self._silent_ms = 0
        self._started = 0.0
        self._last_voiced = 0.0
        self._late_run = self._late_onsets = 0
        self._voice_after_onset = False
        self.endpoint_ms = self.options.endpoint_ms
        self._level = -120.0


def webrtc_classifier(aggressiveness: int) -> Callable[[Pcm], bool]:
    """webrtcvad's verdict for one 20 ms frame of 16 kHz int16 audio."""
    import webrtcvad

    vad = webrtcvad.Vad(aggressiveness)

    def classify(pcm: Pcm) -> bool:
        return bool(vad.is_speech(pcm.tobytes(), SAMPLE_RATE))

    return classify
