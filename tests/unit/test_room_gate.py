"""The room gate: starting is stricter than going on; the room, the user and our echo."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.audio import frames, rms_dbfs
from pipeline.events import FRAME_SAMPLES, AudioFrame, Endpoint, SilenceOnset, SpeechStarted
from pipeline.listen.vad import Endpointer, VadOptions
from pipeline.room import Room, RoomOptions, Stream
from pipeline.room.bands import band_energies
from pipeline.room.gate import IDLE_WAIT_FRAMES
from tests.audio_helpers import Noise

noise = Noise(seed=0)


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 0.02
        return self.t


def quiet_room(room: Room, clock: Clock) -> None:
    for _ in range(60):
        room.judge(noise(-70), clock(), False, in_utterance=False)


def babble_room(room: Room, clock: Clock, frames: int = 200) -> None:
    """A room whose level swings between -45 and -35 dB (median -40, peaks ~-36)."""
    for level in np.random.default_rng(1).uniform(-45, -35, frames):
        room.judge(noise(float(level)), clock(), True, in_utterance=False)


def test_in_a_talking_room_a_voice_above_its_median_goes_on_but_does_not_start() -> None:
    room, clock = Room(), Clock()
    babble_room(room, clock)
    heard = room.judge(noise(-35), clock(), True, in_utterance=False)
    assert heard.voiced and not heard.confirmed
    assert room.judge(noise(-25), clock(), True, in_utterance=False).confirmed


def test_what_webrtcvad_calls_silence_is_never_speech() -> None:
    room, clock = Room(), Clock()
    babble_room(room, clock)
    heard = room.judge(noise(-20), clock(), False, in_utterance=False)
    assert not heard.voiced and not heard.confirmed


def test_a_session_opened_before_anyone_speaks_waits_for_the_room() -> None:
    """Talk in the room from the first frame on would otherwise be taken for the user and
    hold the floor: where nobody speaks at once (a browser session), nothing starts before
    the room has been heard (~0.8 s) — unless it has been quiet so far (below)."""
    room, clock = Room(), Clock()
    assert not room.judge(noise(-20), clock(), True, in_utterance=False).confirmed
    quiet_room(room, clock)
    assert room.judge(noise(-20), clock(), True, in_utterance=False).confirmed


def test_before_the_room_has_been_heard_a_voice_must_rise_out_of_a_pause() -> None:
    """A satellite streams from its wake word on and the question follows at once: the
    first words cannot wait for the room to be measured. Until it is, a start must stand
    well above the quietest of what was heard: talk in the room from the first frame on
    (little dynamic range) starts nothing and so cannot hold the floor."""
    room, clock = Room(stream=Stream(speech_at_once=True)), Clock()
    for _ in range(5):
        assert not room.judge(noise(-70), clock(), False, in_utterance=False).confirmed
    assert room.judge(noise(-35), clock(), True, in_utterance=False).confirmed

    talking = Room(stream=Stream(speech_at_once=True))
    levels = np.random.default_rng(1).uniform(-45, -35, 30)
    assert not any(talking.judge(noise(float(level)), clock(), True, in_utterance=False).confirmed
                   for level in levels)
    babble_room(talking, clock)
    assert not talking.judge(noise(-35), clock(), True, in_utterance=False).confirmed
    assert talking.judge(noise(-20), clock(), True, in_utterance=False).confirmed


def test_a_long_first_utterance_is_measured_against_the_quiet_before_it() -> None:
    """A file or a satellite that speaks half a second in: the room is not known yet, so a
    frame goes on by rising out of the quietest of what was heard. After a second of words
    that quietest is still the silence before them, not the words' own soft parts (which
    sit 15 dB under the vowels): the question's loud last word ("... in a week") goes on
    instead of being cut as the room (the turn's transcript was "in a...")."""
    room, clock = Room(stream=Stream(speech_at_once=True, hears_us=False)), Clock()
    for _ in range(25):
        room.judge(noise(-100), clock(), False, in_utterance=False)
    words = np.tile([-25.0, -25.0, -28.0, -40.0], 20)  # 1.6 s: vowels and soft consonants
    heard = [room.judge(noise(float(level)), clock(), True, in_utterance=True) for level in words]
    assert all(h.voiced for h in heard[-12:])
    assert heard[-4].confirmed


def test_a_start_must_come_near_the_users_learned_level_but_a_resume_need_not() -> None:
    """Talk from across the room is 15 dB under the user; the user's quiet last word is not
    a new talker."""
    room, clock = Room(), Clock()
    quiet_room(room, clock)
    for _ in range(30):
        room.judge(noise(-20), clock(), True, in_utterance=True)
    room.utterance_ended(clock.t)
    assert not room.judge(noise(-35), clock(), True, in_utterance=False).confirmed
    assert room.judge(noise(-35), clock(), True, in_utterance=True).confirmed
    assert room.judge(noise(-25), clock(), True, in_utterance=False).confirmed


def test_the_neural_vad_must_agree_to_start_but_not_to_go_on() -> None:
    room, clock = Room(speech_probability=lambda pcm: 0.1), Clock()
    quiet_room(room, clock)
    heard = room.judge(noise(-20), clock(), True, in_utterance=False)
    assert heard.voiced and not heard.confirmed


def test_our_own_echo_neither_starts_nor_continues_a_turn() -> None:
    room, clock = Room(), Clock()
    quiet_room(room, clock)
    played = noise(-20)
    room.echo.played(played, clock.t)
    for _ in range(4):  # the way out and back: 100 ms
        room.judge(noise(-70), clock(), False, in_utterance=False)
    heard = room.judge((played * 0.3).astype(np.int16), clock(), True, in_utterance=False)
    assert not heard.voiced and not heard.confirmed


def test_the_first_syllables_of_a_turn_do_not_become_the_room() -> None:
    """A frame joins the room only once it did not start an utterance."""
    room, clock = Room(), Clock()
    for _ in range(IDLE_WAIT_FRAMES + 10):
        room.judge(noise(-70), clock(), False, in_utterance=False)
    for _ in range(5):  # the start window of a turn
        room.judge(noise(-20), clock(), True, in_utterance=False)
    room.judge(noise(-20), clock(), True, in_utterance=True)
    assert room.room.peak_db < -60


def test_conditioning_runs_only_while_the_stream_needs_it() -> None:
    calls: list[int] = []

    class Halve:
        def process(self, pcm: np.ndarray) -> np.ndarray:
            calls.append(len(pcm))
            return (pcm // 2).astype(np.int16)

    room = Room(conditioner=Halve())
    frame = np.full(FRAME_SAMPLES, 1000, np.int16)
    assert (room.condition(frame) == 500).all() and calls == [160, 160]
    processed = Room(conditioner=Halve(), stream=Stream(processed=True))
    assert not processed.conditioning  # the browser says it suppressed noise itself
    assert processed.condition(frame) is frame and calls == [160, 160]


def test_in_a_quiet_room_a_soft_word_the_neural_vad_doubts_resumes_the_turn() -> None:
    """The end of "France" is 0.3 s of fricative 20-40 dB under the vowels that Silero
    doubts: louder than a quiet room ever is, it keeps and resumes the turn (else the
    speculative transcript is cut: "capital of friend"). In a talking room a voice that
    soft is the room's."""
    for room_sound, resumes in ((quiet_room, True), (babble_room, False)):
        room, clock = Room(speech_probability=lambda pcm: 0.2), Clock()
        room_sound(room, clock)
        for _ in range(30):
            heard = room.judge(noise(-45), clock(), True, in_utterance=True)
        assert heard.resumes is resumes and heard.voiced is resumes and not heard.confirmed


def feed(endpointer: Endpointer, frames: list[np.ndarray], start: float = 0.0) -> list[object]:
    events: list[object] = []
    for k, pcm in enumerate(frames):
        events += endpointer.push(AudioFrame(pcm, start + (k + 1) * 0.02))
    return events


def test_a_burst_of_background_talk_too_short_to_be_a_turn_ends_unheard() -> None:
    """It may start an utterance, but with less confirmed speech than min_turn_ms it
    never raises a silence onset or an endpoint: no speculation, no turn (the endpointer
    keeps it as unheard: pipeline.turn.talk_over hears it if it held a reply)."""
    endpointer = Endpointer(VadOptions(), classify=lambda pcm: bool(np.abs(pcm).max() > 100),
                            room=Room(RoomOptions(min_turn_ms=200)))
    quiet = [noise(-80) for _ in range(40)]
    burst = [noise(-20) for _ in range(7)]  # 140 ms
    events = feed(endpointer, quiet + burst + quiet)
    assert [type(e) for e in events] == [SpeechStarted]
    unheard = endpointer.take_unheard()  # kept once, for a talk-over to be heard by words
    assert unheard is not None and len(unheard.audio) >= 7 * FRAME_SAMPLES
    assert endpointer.take_unheard() is None
    longer = [noise(-20) for _ in range(15)]  # 300 ms: a turn
    events = feed(endpointer, longer + quiet, start=10.0)
    assert [type(e) for e in events] == [SpeechStarted, SilenceOnset, Endpoint]


@pytest.mark.parametrize("quiet", [True, False])
def test_the_talk_in_the_room_before_a_turn_is_turned_down_in_its_pre_roll(quiet: bool) -> None:
    """The turn's audio keeps 600 ms from before its start (pre-roll and start lag): in a
    talking room that is someone else's words. Up to 100 ms before the first frame loud
    enough to start a turn, the recognizer gets them 26 dB down."""
    endpointer = Endpointer(VadOptions(), classify=lambda pcm: bool(np.abs(pcm).max() > 100),
                            room=Room(RoomOptions(quiet_pre_roll=quiet)))
    talk = [noise(float(level)) for level in np.random.default_rng(4).uniform(-45, -35, 200)]
    user = [noise(-20) for _ in range(20)]
    events = feed(endpointer, talk + user + [noise(-80) for _ in range(40)])
    assert endpointer.room is not None and endpointer.room.room.known
    (end,) = [e for e in events if isinstance(e, Endpoint)]
    heard = [rms_dbfs(f) for f in frames(end.audio)]
    first_loud = next(i for i, level in enumerate(heard) if level > -25)
    assert first_loud >= 25  # the pre-roll: 30 frames, but for the start window's
    before = [rms_dbfs(f) for f in talk[-first_loud:]]
    if quiet:
        assert all(h < b - 24  # (int16 rounding at -70 dB)
                   for h, b in zip(heard[:first_loud - 5], before, strict=False)), heard
        assert heard[first_loud - 5:first_loud] == pytest.approx(before[-5:], abs=0.01)
    else:
        assert heard[:first_loud] == pytest.approx(before, abs=0.01)
    assert heard[first_loud:first_loud + 20] == pytest.approx([-20] * 20, abs=1.5)


def test_in_a_quiet_room_a_soft_voice_is_loud_enough_to_keep_the_pre_roll_from() -> None:
    """A room at -70 dB: a soft first word at -60 is over its line, so the pre-roll is kept
    from 100 ms before it; only the room's hiss before that is turned down."""
    from pipeline.room.levels import quiet_pre_roll

    room, clock = Room(), Clock()
    quiet_room(room, clock)
    pre_roll = [noise(-70) for _ in range(20)] + [noise(-60) for _ in range(10)]
    heard = [rms_dbfs(f) for f in room.pre_roll(pre_roll)]
    assert all(level < -90 for level in heard[:15])  # the hiss, 26 dB down
    assert heard[15:] == pytest.approx([rms_dbfs(f) for f in pre_roll[15:]], abs=0.01)
    soft = [noise(-60) for _ in range(10)]
    assert Room().pre_roll(soft) is soft  # a room not yet heard: nothing to tell apart
    assert Room(RoomOptions(enabled=False)).pre_roll(soft) is soft
    assert quiet_pre_roll(soft, -30.0, 5) is soft  # no frame loud enough
    loud_third = [noise(-60), noise(-60), noise(-20), noise(-60)]
    assert quiet_pre_roll(loud_third, -30.0, 2) is loud_third  # within what is kept


def test_before_the_room_is_known_a_soft_word_end_goes_on_on_a_stream_that_speaks_at_once(
        ) -> None:
    """A satellite's question that starts at once ends in a soft "France" before the room
    has been heard: louder than the pause it rose from, it goes on past the hold."""
    room, clock = Room(speech_probability=lambda pcm: 0.2,
                       stream=Stream(speech_at_once=True)), Clock()
    for _ in range(5):
        room.judge(noise(-90), clock(), False, in_utterance=False)
    heard = [room.judge(noise(-45), clock(), True, in_utterance=True) for _ in range(30)]
    assert not room.room.known and all(h.voiced and h.resumes for h in heard)
    # A browser session with talk in its room from the start waits for the room: the
    # hold decides.
    browser = Room(speech_probability=lambda pcm: 0.2)
    for _ in range(5):
        browser.judge(noise(-40), clock(), True, in_utterance=False)
    assert not browser.judge(noise(-45), clock(), True, in_utterance=True).resumes


def test_a_browser_session_quiet_so_far_hears_a_question_before_the_room_is_known() -> None:
    """A client that speaks 0.3 s after `ready` (the bench, the tests, a quick user): the
    room takes ~0.8 s to measure, but a stream that has been quiet is no talking room."""
    quiet, clock = Room(), Clock()
    for _ in range(15):
        quiet.judge(noise(-70), clock(), False, in_utterance=False)
    assert not quiet.room.known
    assert quiet.judge(noise(-25), clock(), True, in_utterance=False).confirmed
    talking = Room()
    for level in np.random.default_rng(2).uniform(-45, -35, 15):
        talking.judge(noise(float(level)), clock(), True, in_utterance=False)
    assert not talking.judge(noise(-25), clock(), True, in_utterance=False).confirmed


class Louder:
    """A fake automatic gain: x4 (+12 dB), recording how much it was fed."""

    def __init__(self) -> None:
        self.fed = 0

    def process(self, pcm: np.ndarray) -> np.ndarray:
        self.fed += len(pcm)
        return np.clip(pcm.astype(np.int32) * 4, -32768, 32767).astype(np.int16)


def test_the_gain_raises_what_the_recognizer_hears_not_what_the_gate_judges() -> None:
    """A turn spoken 20 dB too softly: the utterance audio handed on is raised, the gate
    judged the frames as they came (the same events as without a gain), and the gain was
    fed every frame so that it follows the stream."""
    quiet = [noise(-80) for _ in range(40)]
    turn = [noise(-40) for _ in range(20)]
    results = []
    for gain in (None, Louder()):
        endpointer = Endpointer(VadOptions(), classify=lambda pcm: bool(np.abs(pcm).max() > 10),
                                room=Room(RoomOptions(min_turn_ms=100), gain=gain))
        events = feed(endpointer, quiet + turn + quiet)
        ends = [e for e in events if isinstance(e, Endpoint)]
        assert len(ends) == 1
        results.append(([type(e) for e in events], ends[0].audio))
        if gain is not None:
            assert gain.fed == FRAME_SAMPLES * len(quiet + turn + quiet)
    (plain_events, plain_audio), (gained_events, gained_audio) = results
    assert gained_events == plain_events
    assert len(gained_audio) == len(plain_audio)
    assert np.abs(gained_audio).max() == 4 * np.abs(plain_audio).max()


def test_the_gain_must_be_off_or_a_level_below_full_scale() -> None:
    for bad in (-1, 32):
        with pytest.raises(ValueError, match="gain_dbfs"):
            RoomOptions(gain_dbfs=bad)


def test_a_browser_stream_gets_no_server_gain() -> None:
    gain = Louder()
    room = Room(gain=gain, stream=Stream(processed=True))
    frame = np.full(FRAME_SAMPLES, 100, np.int16)
    assert room.for_ear(frame) is frame and gain.fed == 0


def user_turn(room: Room, clock: Clock, level: float, frames: int = 40) -> None:
    for _ in range(frames):
        room.judge(noise(level), clock(), True, in_utterance=True)
    room.utterance_ended(clock.t)


@pytest.mark.parametrize(("room_db", "noisy"), [(-70.0, False), (-40.0, True)])
def test_the_noisy_room_ear_is_chosen_from_the_users_level_over_the_rooms(
    room_db: float, noisy: bool,
) -> None:
    """A user at -15 dB over a room at -70 (55 dB over it) is heard by the usual ear;
    over talk at -40 (25 dB, under NOISY_EAR_SNR_DB) by the noisy-room ear."""
    room, clock = Room(), Clock()
    assert room.snr_db(clock.t) is None and not room.noisy_ear(clock.t)  # nothing known
    for _ in range(80):
        room.judge(noise(room_db), clock(), True, in_utterance=False)
    user_turn(room, clock, -15.0)
    snr = room.snr_db(clock.t)
    assert snr is not None and snr == pytest.approx(-15.0 - room_db, abs=2.0)
    assert room.noisy_ear(clock.t) is noisy
    assert not Room(RoomOptions(enabled=False)).noisy_ear(clock.t)


def test_a_stream_that_does_not_hear_us_tells_the_echo_guard_nothing() -> None:
    """`apace talk` (files in and out) drains replies as fast as it likes: nothing it
    takes is played where its microphone is, so nothing is predicted as our echo."""
    room = Room(stream=Stream(speech_at_once=True, hears_us=False))
    tone = (0.1 * np.sin(2 * np.pi * 440 * np.arange(FRAME_SAMPLES) / 16000) * 32767)
    for k in range(5):
        room.played(tone.astype(np.int16), 1.0 + k * 0.02)
    assert room.echo.hear(band_energies(tone.astype(np.int16)), 1.12).echo == 0.0
