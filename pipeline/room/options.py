"""What a room gate (pipeline.room.gate) is told: how to tell the user from the room
(`RoomOptions`), and what the transport knows of its microphone audio (`Stream`)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.events import FRAME_MS


@dataclass(frozen=True, kw_only=True)
class RoomOptions:
    """How the gate tells the user from the room. Levels in dB."""

    enabled: bool = True
    """False: webrtcvad and the utterance speech floor alone, as before the gate."""
    conditioning: bool = True
    """Noise suppression on streams whose client has not done it (when a conditioner is
    given); a stream can turn it off (`Room.conditioning`) when its client did it."""
    always_suppress: bool = False
    """Suppress noise in a quiet room too (default: only once the raw room is noisy,
    pipeline.room.conditioning.Suppression)."""
    gain_dbfs: int = 0
    """Automatic gain on what the recognizer hears of a raw stream (WebRTC's digital AGC:
    the level it aims for, dB below full scale, 1-31; 0 off). Only the utterance audio is
    raised: the gate judges the frames as they came, so its learned levels and the echo
    guard's loss are not moved by the gain. Whisper tiny.en on a talker 35 dB down: WER
    21.0 % → 18.7 % with 3; at normal levels no change (docs/rooms.md)."""
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
    (the endpointer's own resume_ms if longer): in background talk, 60 ms let a burst of
    someone else's words join the end of a question (bench babble, 1 in 16 questions)."""
    min_turn_ms: int = 200
    """Confirmed speech an utterance needs before it is a turn (before its silence onset
    is told): a burst of background talk confirms a few frames, a question hundreds."""
    start_lag_ms: int = 300
    """Audio kept before a start on top of the endpointer's pre-roll: the strict check
    confirms a turn up to a few hundred ms into its first word (quality bench: 7 of 87
    turns lost their first word with the plain pre-roll, "What's the time" → "It's the
    time")."""
    quiet_pre_roll: bool = True
    """A turn's pre-roll (the audio kept from before its start, start_lag_ms included) is
    the room until its first frame as loud as a start must be (start_margin_db over the
    room's peaks; the frame's full-band level, a little over the gate's own measure above
    100 Hz): what comes before it, but for `pre_roll_keep_ms`, is turned down 26 dB,
    so that Whisper hears the user's words and not the talk in the room before them ("30,
    set a timer…", "What is 15% of 80% of 80%…"). Offline, the gate's own turns of the ASR
    set's tuning lines heard by whisper-base (docs/rooms.md)."""
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
    given; pipeline.room.cancel). Off by default: the canceller's suppressor takes the
    first 20-40 ms of a user talking over the reply down with the echo, and talk-overs
    stopped later than with the echo guard alone (docs/rooms.md); it does
    catch a talk-over of a session's first reply, before the guard has learned the room."""
    echo_margin_db: float = 3.0
    """Head-room over the learned echo loss before a residual counts."""
    max_echo_delay_s: float = 1.0
    """The longest playback → microphone delay looked for."""
    echo_cancelled_db: float = -20.0
    """Where the client cancels its own echo (`Stream.echo_cancelled`), the echo guard
    starts from this loss rather than from "as loud as what was played", which was deaf to
    a user who spoke in the first second of a session's first reply. Offline (`make
    echo-probe`, talk-overs 0-1.3 s into a first reply, residual echo -45 dB, with and
    without background talk): held within 300 ms of speech in 4 and 0 of 24 from the
    cautious start (5 never), in 24 of 24 from -20 dB (median 120-140 ms). Through the
    whole pipeline ("Stop, stop, wait a moment please" 0.2-0.6 s in): from -15 dB the
    first "Stop" was held but not confirmed for long enough, the reply went on and stopped
    only at "wait" (1.5 s) in 4 of 8; from -20 dB it stopped at the first "Stop" in 6 of 6
    (359-437 ms). The price, a client that says so but lets its echo through: -10 dB of it
    held 3 of 24 first replies, one of them cut (from -15 dB: none). Once the delay of an
    echo that does come back is found, the guard starts cautious again."""

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
