"""What a room gate (pipeline.room.gate) is told: how to tell the user from the room
(`RoomOptions`), and what the transport knows of its microphone audio (`Stream`)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.events import FRAME_MS


@dataclass(frozen=True, kw_only=True)
class RoomOptions:
    """How the gate tells the user from the room. Levels in dB, durations in ms (`_s`:
    seconds). What each part does and why the defaults are what they are: docs/rooms.md."""

    enabled: bool = True
    """The gate is on (default); False: webrtcvad and the utterance speech floor alone."""
    conditioning: bool = True
    """Noise suppression on streams whose client has not done it (when a conditioner is
    given); a stream can turn it off (`Room.conditioning`) when its client did it."""
    always_suppress: bool = False
    """Suppress noise in a quiet room too (default: only once the raw room is noisy,
    pipeline.room.conditioning.Suppression)."""
    gain_dbfs: int = 0
    """Automatic gain on what the recognizer hears of a raw stream: the level WebRTC's
    digital AGC aims for, dB below full scale, 1-31 (default 0: off). The gate and the echo
    guard judge the frames as they came."""
    start_margin_db: float = 4.0
    """A turn starts (or resumes, or interrupts) only on voice this far above the room's
    usual peaks (its 90th-percentile frame level)."""
    continue_margin_db: float = 3.0
    """A turn goes on while the voice is this far above the room's median level."""
    user_range_db: float = 12.0
    """Once the user's level is learned, a start must come within this of it: talk from
    across the room arrives 10-20 dB quieter than the person at the microphone."""
    resume_range_db: float = 18.0
    """The same, for speech that resumes a turn after a pause or counts toward a barge-in
    (the end of a question is often its quietest part)."""
    resume_ms: int = 100
    """Confirmed speech, without a break, that resumes a turn after its silence onset
    (default 100; the endpointer's own resume_ms if longer)."""
    min_turn_ms: int = 200
    """Confirmed speech an utterance needs before it is a turn (before its silence onset
    is told): a burst of background talk confirms a few frames, a question hundreds."""
    start_lag_ms: int = 300
    """Audio kept before a start on top of the endpointer's pre-roll (default 300): the
    strict check confirms a turn up to a few hundred ms into its first word."""
    quiet_pre_roll: bool = True
    """Turn a turn's pre-roll down 26 dB up to `pre_roll_keep_ms` before its first frame
    as loud as a start must be (full-band level start_margin_db over the room's peaks), so
    that Whisper hears the user's words, not the room's talk before them (default on)."""
    pre_roll_keep_ms: int = 100
    """Pre-roll kept whole before that first loud frame (a soft first consonant)."""
    speech_probability: float = 0.5
    """The neural VAD's probability needed to start (when one is given); 0 ignores it."""
    hold_s: float = 0.3
    """A turn goes on only while something passed the strict check this recently (or is
    louder than the room's talk gets): the user's weakest syllables come within a few
    hundred ms of a strong one, background talk can go on for ever on its own."""
    tail_s: float = 0.12
    """Voiced frames this soon after a confirmed one go on whatever their level: the
    soft end of a word ("France", "cats") sinks under background talk, and a turn whose
    silence onset came before it is transcribed without it ("capital of print")."""
    echo: bool = True
    """Discount the echo of our own playback (pipeline.room.echo)."""
    echo_cancel: bool = False
    """Take our own playback out of the microphone's audio first (when a canceller is
    given; pipeline.room.cancel). Default off: it also takes the first 20-40 ms of a user
    talking over the reply down, and talk-overs stopped later than with the guard alone."""
    echo_margin_db: float = 3.0
    """Head-room over the learned echo loss before a residual counts."""
    max_echo_delay_s: float = 1.0
    """The longest playback → microphone delay looked for."""
    echo_cancelled_db: float = -20.0
    """Where the client cancels its own echo (`Stream.echo_cancelled`), the echo guard
    starts from our echo this far down (default -20 dB, -60 to 0) rather than as loud as
    what was played; once an echo's delay is found it starts cautious again."""

    def __post_init__(self) -> None:
        for name in ("start_margin_db", "continue_margin_db", "user_range_db",
                     "resume_range_db", "echo_margin_db"):
            if not 0 <= getattr(self, name) <= 40:
                raise ValueError(f"room {name} must be 0-40 dB")
        if not 0 <= self.speech_probability < 1:
            raise ValueError("room speech_probability must be in [0, 1)")
        if not -60 <= self.echo_cancelled_db <= 0:
            raise ValueError("room echo_cancelled_db must be -60 to 0 dB")
        if not 0.1 <= self.max_echo_delay_s <= 2:
            raise ValueError("room max_echo_delay_s must be 0.1-2 s")
        if not 0 <= self.pre_roll_keep_ms <= 1000 or self.pre_roll_keep_ms % FRAME_MS:
            raise ValueError(f"room pre_roll_keep_ms must be 0-1000, a multiple of {FRAME_MS}")
        if not 0 <= self.gain_dbfs <= 31:
            raise ValueError(f"room gain_dbfs must be 0 (off) or 1-31, got {self.gain_dbfs}")


@dataclass(frozen=True)
class Stream:
    """What a transport knows of its microphone audio."""

    processed: bool = False
    """The client suppressed noise itself (a browser asked for `noiseSuppression` and got
    it): the server does not do it again."""
    speech_at_once: bool = False
    """Speech may begin with the stream (a satellite streams from its wake word on, a WAV
    file): before the room is known, a voice that rises out of a pause starts a turn.
    Otherwise (a browser or Realtime session, open before anyone speaks) nothing starts
    until the room has been heard (~0.8 s)."""
    hears_us: bool = True
    """Our replies play where this microphone is, through the transport (what it plays is
    the echo reference). False: a stream whose replies go elsewhere (a Wyoming satellite's
    speech-to-text, whose answer Home Assistant plays; `apace talk`, files in and out):
    no echo canceller and no echo guard for it."""
    echo_cancelled: bool = False
    """The client cancels its own echo (a browser asked for `echoCancellation` and got it):
    the echo guard starts from RoomOptions.echo_cancelled_db."""
