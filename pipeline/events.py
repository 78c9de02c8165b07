"""What flows through the pipeline: a handful of small frozen dataclasses.

One internal audio format: 16 kHz mono int16, 20 ms frames (320 samples). Times are
seconds on one monotonic clock (`pipeline.timeline.now`). What a conversation tells the
outside world (transcripts, reply text, turns) is in pipeline.conversation_events.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

SAMPLE_RATE = 16_000
FRAME_MS = 20
FRAME_SAMPLES = SAMPLE_RATE * FRAME_MS // 1000

Pcm = npt.NDArray[np.int16]


@dataclass(frozen=True)
class AudioFrame:
    """20 ms of 16 kHz mono int16 audio; `t` is when its last sample arrived."""

    pcm: Pcm
    t: float


@dataclass(frozen=True)
class SpeechStarted:
    """Sustained speech began; `t` is the time of its first voiced frame."""

    t: float


@dataclass(frozen=True)
class SilenceOnset:
    """A short silence after speech: the turn may be over (tentative).

    `speech_end` is the end of the last voiced frame: the true end of speech if the
    silence lasts. `audio` is the utterance so far, pre-roll included.
    """

    t: float
    speech_end: float
    audio: Pcm = field(repr=False)
    again: bool = False
    """A later onset of the same pause: voice came after the first one without resuming
    the turn (a soft last word the gate doubted, or the room), and has stopped. `audio`
    has it; a transcript made at the earlier onset may lack a word."""


@dataclass(frozen=True)
class SpeechResumed:
    """Speech came back after a silence onset, before the endpoint."""

    t: float


@dataclass(frozen=True)
class Endpoint:
    """The user's turn is over (final). `audio` is the whole utterance."""

    t: float
    speech_end: float
    audio: Pcm = field(repr=False)
    voice_after_onset: bool = False
    """Voice went on after the last silence onset (first or `again`) without resuming
    the turn (a soft last word the gate doubted): a transcript made at that onset may lack
    it."""


VadEvent = SpeechStarted | SilenceOnset | SpeechResumed | Endpoint


@dataclass(frozen=True)
class Clause:
    """A speakable piece of reply text. `ends_sentence` marks a sentence boundary."""

    text: str
    index: int
    ends_sentence: bool
