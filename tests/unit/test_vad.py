"""Endpointer: the speech state machine, driven with pre-classified synthetic frames."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pipeline.audio import frames
from pipeline.events import (
    FRAME_SAMPLES,
    AudioFrame,
    Endpoint,
    SilenceOnset,
    SpeechStarted,
)
from pipeline.listen.vad import MAX_LATE_ONSETS, Endpointer, VadOptions, webrtc_classifier

OPTIONS = VadOptions(
    start_ms=60, start_window_ms=100, pre_roll_ms=100, onset_ms=60, endpoint_ms=200,
    resume_ms=60,
)


class Feeder:
    """Feeds frames numbered 1, 2, 3 … (frame n ends at t = n * 20 ms) and logs events."""

    def __init__(self, options: VadOptions = OPTIONS) -> None:
        self.endpointer = Endpointer(options, classify=lambda pcm: bool(pcm.any()))
        self.n = 0
        self.events: list[tuple[int, object]] = []

    def feed(self, pattern: str) -> list[object]:
        """'x' is a voiced frame, '.' a silent one, 's' a soft one (voice that goes on but
        neither starts nor resumes a turn: a room gate's doubt); returns the events."""
        caused = []
        for ch in pattern:
            self.n += 1
            pcm = np.full(FRAME_SAMPLES, self.n, np.int16)  # the frame's number, for audio checks
            frame = AudioFrame(pcm, self.n * 0.02)
            sure = ch == "x"
            for event in self.endpointer.advance(frame, ch in "xs", confirmed=sure, resumes=sure):
                self.events.append((self.n, event))
                caused.append(event)
        return caused

    def kinds(self) -> list[tuple[int, str]]:
        return [(n, type(e).__name__) for n, e in self.events]


def test_silence_alone_raises_no_events() -> None:
    feeder = Feeder()
    assert feeder.feed("." * 100) == []
    assert not feeder.endpointer.speaking


def test_scattered_voiced_frames_below_start_ms_do_not_start_speech() -> None:
    """Two voiced frames in every 100 ms window are under start_ms (60 ms)."""
    feeder = Feeder()
    feeder.feed("x...x...." * 10)
    assert feeder.events == []
    assert not feeder.endpointer.speaking


def test_speech_starts_once_start_ms_is_voiced_within_the_window() -> None:
    """start_ms counts voiced frames in the window, not only consecutive ones."""
    feeder = Feeder()
    assert feeder.feed("....x.x") == []
    (started,) = feeder.feed("x")
    assert isinstance(started, SpeechStarted)
    assert feeder.endpointer.speaking


def test_speech_started_time_is_the_start_of_the_first_voiced_frame() -> None:
    feeder = Feeder()
    feeder.feed("...xxx")  # first voiced frame is frame 4: it spans 60-80 ms
    (n, started) = feeder.events[0]
    assert n == 6
    assert isinstance(started, SpeechStarted)
    assert started.t == pytest.approx(0.06)


def test_a_turn_goes_start_then_onset_then_endpoint_at_the_configured_silences() -> None:
    feeder = Feeder()
    feeder.feed("xxx" + "x" * 7 + "." * 10)
    # speech frames 1-10; onset after 3 silent frames (60 ms), endpoint after 10 (200 ms)
    assert feeder.kinds() == [(3, "SpeechStarted"), (13, "SilenceOnset"), (20, "Endpoint")]
    assert not feeder.endpointer.speaking


def test_onset_and_endpoint_report_the_end_of_the_last_voiced_frame() -> None:
    feeder = Feeder()
    feeder.feed("xxxxx.x" + "." * 10)  # last voiced frame is frame 7, ending at 140 ms
    onset = next(e for _, e in feeder.events if isinstance(e, SilenceOnset))
    endpoint = next(e for _, e in feeder.events if isinstance(e, Endpoint))
    assert onset.speech_end == pytest.approx(0.14)
    assert endpoint.speech_end == pytest.approx(0.14)
    assert endpoint.t == pytest.approx(17 * 0.02)


def test_endpoint_audio_is_the_utterance_with_pre_roll_and_trailing_silence() -> None:
    """Pre-roll keeps pre_roll_ms before the start (100 ms = 5 frames, the start included)."""
    feeder = Feeder()
    feeder.feed("......xxx" + "xx" + "." * 10)
    endpoint = feeder.events[-1][1]
    assert isinstance(endpoint, Endpoint)
    frame_numbers = endpoint.audio.reshape(-1, FRAME_SAMPLES)[:, 0].tolist()
    # started on frame 9; pre-roll is frames 5-9; then 10-21 (2 voiced, 10 silent)
    assert frame_numbers == list(range(5, 22))


def test_onset_audio_is_the_utterance_so_far() -> None:
    feeder = Feeder()
    feeder.feed("xxx" + "...")
    onset = feeder.events[-1][1]
    assert isinstance(onset, SilenceOnset)
    assert onset.audio.reshape(-1, FRAME_SAMPLES)[:, 0].tolist() == [1, 2, 3, 4, 5, 6]


def test_sustained_voice_after_onset_resumes_speech_and_postpones_the_endpoint() -> None:
    feeder = Feeder()
    feeder.feed("xxxxx" + "...." + "xxx")  # onset at frame 8; frames 10-12 voiced (60 ms)
    assert feeder.kinds()[-2:] == [(8, "SilenceOnset"), (12, "SpeechResumed")]
    feeder.feed("." * 10)
    # Onset and endpoint count again from the resumed speech's last frame (12).
    assert feeder.kinds()[-2:] == [(15, "SilenceOnset"), (22, "Endpoint")]
    assert feeder.events[-1][1].speech_end == pytest.approx(0.24)


def test_a_voiced_blip_in_a_pause_neither_resumes_nor_delays_the_endpoint() -> None:
    feeder = Feeder()
    feeder.feed("xxxxx" + "..." + "x" + "......")  # one voiced frame, under resume_ms
    assert [k for _, k in feeder.kinds()] == ["SpeechStarted", "SilenceOnset", "Endpoint"]
    assert feeder.kinds()[-1] == (15, "Endpoint")  # same frame as with no blip at all


def test_scattered_voiced_frames_in_a_pause_do_not_add_up_to_a_resume() -> None:
    """resume_ms is sustained voice: three single-frame clicks (3 x 20 ms) are not 60 ms."""
    feeder = Feeder()
    feeder.feed("xxxxx" + "..." + "x.x.x..")
    assert feeder.kinds() == [(3, "SpeechStarted"), (8, "SilenceOnset"), (15, "Endpoint")]


@pytest.mark.parametrize(("pause", "stale"), [
    (".......sss", True),  # 60 ms of soft voice still going at the endpoint
    ("...sss.......", False),  # stopped before it: the onset was raised again with it
    ("...ss........", False),  # 40 ms: a blip
    ("...s.s.s.....", False),  # scattered
    ("...xxx" + "." * 10, False),  # resumed: the next onset's transcript has it
    ("." * 10, False),
])
def test_the_endpoint_says_whether_voice_came_after_the_onset(pause: str, stale: bool) -> None:
    feeder = Feeder()
    feeder.feed("xxxxx" + pause)
    end = feeder.events[-1][1]
    assert isinstance(end, Endpoint) and end.voice_after_onset is stale


def test_late_voice_that_stops_raises_the_onset_again_with_it_a_few_times_a_pause() -> None:
    """60 ms of voice that does not resume the turn makes the onset's audio stale; when it
    stops, the onset is raised again (`again`) with the audio so far, speech end unchanged.
    Up to MAX_LATE_ONSETS a pause: after that the endpoint says so instead."""
    feeder = Feeder(dataclasses.replace(OPTIONS, endpoint_ms=800))
    feeder.feed("xxxxx" + "..." + "sss." * (MAX_LATE_ONSETS + 1) + "." * 40)
    onsets = [(n, e) for n, e in feeder.events if isinstance(e, SilenceOnset)]
    assert [n for n, _ in onsets] == [8, 12, 16, 20][: MAX_LATE_ONSETS + 1]
    assert [e.again for _, e in onsets] == [False] + [True] * MAX_LATE_ONSETS
    for n, onset in onsets:
        assert onset.speech_end == pytest.approx(0.1)  # the last sure voice: frame 5
        assert len(onset.audio) == n * FRAME_SAMPLES  # frames 1 … n
        assert onset.audio[-2 * FRAME_SAMPLES] == n - 1  # the late voice's last frame
    end = feeder.events[-1][1]
    assert isinstance(end, Endpoint) and end.voice_after_onset  # the 4th burst


def test_an_utterance_longer_than_max_utterance_s_is_ended_without_a_pause() -> None:
    options = VadOptions(start_ms=60, start_window_ms=100, pre_roll_ms=100, max_utterance_s=1.0)
    feeder = Feeder(options)
    feeder.feed("x" * 50)
    assert feeder.kinds() == [(3, "SpeechStarted"), (50, "Endpoint")]
    endpoint = feeder.events[1][1]
    assert len(endpoint.audio) == 50 * FRAME_SAMPLES  # 1.0 s of audio, pre-roll included


def test_endpoint_ms_can_be_lengthened_for_one_turn_and_resets_after_it() -> None:
    feeder = Feeder()
    feeder.feed("xxxx")
    feeder.endpointer.endpoint_ms = 300
    feeder.feed("." * 10)
    assert not any(isinstance(e, Endpoint) for _, e in feeder.events)  # 200 ms is not enough
    feeder.feed("." * 5)
    assert feeder.kinds()[-1] == (19, "Endpoint")
    assert feeder.endpointer.endpoint_ms == OPTIONS.endpoint_ms


def test_voiced_ms_counts_the_voiced_frames_of_the_current_utterance() -> None:
    feeder = Feeder()
    feeder.feed("..xxx")  # the start window's voiced frames count
    assert feeder.endpointer.voiced_ms == 60
    feeder.feed("x.x.")
    assert feeder.endpointer.voiced_ms == 100
    feeder.feed("." * 10)  # endpoint: a new utterance starts from zero
    assert feeder.endpointer.voiced_ms == 0


def test_speaking_holds_through_a_pause_until_the_endpoint() -> None:
    feeder = Feeder()
    feeder.feed("xxx" + "....")  # in the pause, after the onset
    assert feeder.endpointer.speaking
    feeder.feed("." * 6)
    assert not feeder.endpointer.speaking


def test_after_an_endpoint_the_next_utterance_starts_afresh() -> None:
    feeder = Feeder()
    feeder.feed("xxx" + "." * 10 + "...." + "xxx" + "." * 10)
    assert [k for _, k in feeder.kinds()] == ["SpeechStarted", "SilenceOnset", "Endpoint"] * 2
    assert feeder.kinds()[3] == (20, "SpeechStarted")
    second = feeder.events[-1][1]
    # Its pre-roll is the 100 ms up to its start (frames 16-20); nothing of the first turn.
    assert second.audio.reshape(-1, FRAME_SAMPLES)[:, 0].tolist() == list(range(16, 31))


@pytest.mark.parametrize(
    "bad",
    [
        {"aggressiveness": 4},
        {"onset_ms": 50},
        {"endpoint_ms": 0},
        {"start_ms": 300, "start_window_ms": 200},
        {"onset_ms": 500, "endpoint_ms": 500},
    ],
)
def test_invalid_vad_options_are_rejected_with_a_value_error(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="vad"):
        VadOptions(**bad)


def test_push_with_webrtcvad_finds_a_voiced_sound_between_silences() -> None:
    """The real classifier: a harmonic-rich 120 Hz buzz is speech, digital silence is not."""
    events = _buzz_then_silence(Endpointer(VadOptions()))
    assert [type(e) for e in events] == [SpeechStarted, SilenceOnset, Endpoint]
    assert 0.4 - 1e-9 <= events[0].t < 0.6  # the buzz starts at 0.4 s
    assert 1.4 <= events[2].speech_end < 1.7  # and ends at 1.4 s (webrtcvad lingers a little)


def test_webrtc_classifier_calls_digital_silence_unvoiced() -> None:
    classify = webrtc_classifier(3)
    assert not any(classify(np.zeros(FRAME_SAMPLES, np.int16)) for _ in range(10))


def _buzz_then_silence(endpointer: Endpointer) -> list[object]:
    t = np.arange(50 * FRAME_SAMPLES) / 16_000
    buzz = sum(np.sin(2 * np.pi * 120 * k * t) / k for k in range(1, 30))
    tone = (buzz / np.abs(buzz).max() * 12_000).astype(np.int16)
    audio = np.concatenate([np.zeros(20 * FRAME_SAMPLES, np.int16), tone,
                            np.zeros(40 * FRAME_SAMPLES, np.int16)])
    events = []
    for i, pcm in enumerate(frames(audio)):
        events += endpointer.push(AudioFrame(pcm, (i + 1) * 0.02))
    return events


def test_the_speech_floor_ends_speech_where_the_sound_ends_not_after_webrtcvads_hangover() -> None:
    gated = _buzz_then_silence(Endpointer(VadOptions()))[-1]
    ungated = _buzz_then_silence(Endpointer(VadOptions(speech_floor_db=0)))[-1]
    assert isinstance(gated, Endpoint) and isinstance(ungated, Endpoint)
    assert gated.speech_end == pytest.approx(1.4)  # the buzz's last frame ends at 1.4 s
    assert ungated.speech_end >= gated.speech_end + 0.06  # webrtcvad's hangover


def _fed(options: VadOptions, levels: list[int]) -> list[object]:
    """Push frames of constant amplitude `levels[i]`; the classifier calls any sound voiced."""
    endpointer = Endpointer(options, classify=lambda pcm: bool(pcm.any()))
    events = []
    for i, level in enumerate(levels, start=1):
        events += endpointer.push(AudioFrame(np.full(FRAME_SAMPLES, level, np.int16), i * 0.02))
    return events


def test_a_voiced_tail_far_below_the_speech_level_counts_as_silence() -> None:
    levels = [10_000] * 10 + [50] * 8 + [0] * 20  # speech, a faint voiced tail (-56 dB), silence
    gated = [e for e in _fed(OPTIONS, levels) if isinstance(e, Endpoint)]
    ungated = [e for e in _fed(dataclasses.replace(OPTIONS, speech_floor_db=0), levels)
               if isinstance(e, Endpoint)]
    assert gated[0].speech_end == pytest.approx(10 * 0.02)
    assert ungated[0].speech_end == pytest.approx(18 * 0.02)


def test_a_quiet_speaker_after_a_loud_one_is_still_heard() -> None:
    """The speech level is per utterance: a loud turn does not mute the next, quieter one."""
    levels = [20_000] * 10 + [0] * 20 + [300] * 10 + [0] * 20
    events = _fed(OPTIONS, levels)
    assert [type(e) for e in events] == [SpeechStarted, SilenceOnset, Endpoint] * 2
    assert events[-1].speech_end == pytest.approx(40 * 0.02)


def test_our_echo_before_a_turn_is_silence_in_its_pre_roll() -> None:
    """Frames the room gate explains as our own playback, heard while nobody has the
    floor, reach the turn's pre-roll as silence: Whisper must not hear our words at the
    start of a question asked over the end of a reply."""
    from pipeline.room import Heard, RoomOptions

    class EchoThenVoice:
        options = RoomOptions()

        def condition(self, pcm: np.ndarray, t: float | None = None) -> np.ndarray:
            return pcm

        def for_ear(self, pcm: np.ndarray) -> np.ndarray:
            return pcm

        def pre_roll(self, frames: list[np.ndarray]) -> list[np.ndarray]:
            return frames

        def judge(self, pcm: np.ndarray, t: float, voiced: bool, *,
                  in_utterance: bool) -> Heard:
            echo = int(pcm[0]) < 100  # frames 1-99 are our echo, then the user
            return Heard(voiced and not echo, voiced and not echo, -20.0, echo=echo)

        def utterance_ended(self, t: float) -> None:
            pass

    endpointer = Endpointer(dataclasses.replace(OPTIONS, pre_roll_ms=200),
                            classify=lambda pcm: True, room=EchoThenVoice())  # type: ignore[arg-type]
    events = []
    for n in range(95, 106):
        events += endpointer.push(AudioFrame(np.full(FRAME_SAMPLES, n, np.int16), n * 0.02))
    assert isinstance(events[0], SpeechStarted)
    audio = endpointer.utterance()
    heard = audio.reshape(-1, FRAME_SAMPLES)[:, 0].tolist()
    assert heard[-1] == 105 and 100 in heard  # the user's frames as they came
    assert heard[0] == 0 and all(v in (0, *range(100, 106)) for v in heard)  # echo → silence
