"""Speaker: the outbound queue of 20 ms frames, with played-sample callbacks."""

from __future__ import annotations

import numpy as np

from pipeline.events import FRAME_SAMPLES
from pipeline.speaker import Speaker


def ramp(n: int) -> np.ndarray:
    return np.arange(1, n + 1, dtype=np.int16)


def test_push_cuts_audio_into_20ms_frames_and_pads_the_last_with_silence() -> None:
    speaker = Speaker()
    audio = ramp(2 * FRAME_SAMPLES + 100)
    speaker.push(audio)
    assert speaker.queued_frames == 3
    frames = [speaker.pop() for _ in range(3)]
    assert all(f is not None and f.shape == (FRAME_SAMPLES,) for f in frames)
    assert all(f.dtype == np.int16 for f in frames if f is not None)
    played = np.concatenate(frames)
    assert np.array_equal(played[: len(audio)], audio)
    assert not played[len(audio) :].any()


def test_audio_of_whole_frames_gets_no_padding_frame() -> None:
    speaker = Speaker()
    speaker.push(ramp(3 * FRAME_SAMPLES))
    assert speaker.queued_frames == 3


def test_pushing_empty_audio_queues_nothing() -> None:
    speaker = Speaker()
    speaker.push(np.zeros(0, np.int16), on_played=lambda n: None)
    assert speaker.queued_frames == 0


def test_pop_returns_none_when_nothing_is_queued() -> None:
    assert Speaker().pop() is None


def test_frames_leave_in_the_order_they_were_pushed() -> None:
    speaker = Speaker()
    speaker.push(np.full(FRAME_SAMPLES, 1, np.int16))
    speaker.push(np.full(FRAME_SAMPLES, 2, np.int16))
    assert [speaker.pop()[0], speaker.pop()[0]] == [1, 2]


def test_on_played_runs_at_pop_with_the_real_samples_of_each_frame() -> None:
    speaker = Speaker()
    played: list[int] = []
    speaker.push(ramp(2 * FRAME_SAMPLES + 60), on_played=played.append)
    assert played == []  # nothing has left yet
    speaker.pop()
    assert played == [FRAME_SAMPLES]
    speaker.pop()
    speaker.pop()
    assert played == [FRAME_SAMPLES, FRAME_SAMPLES, 60]


def test_each_push_keeps_its_own_callback() -> None:
    speaker = Speaker()
    first: list[int] = []
    second: list[int] = []
    speaker.push(ramp(FRAME_SAMPLES), on_played=first.append)
    speaker.push(ramp(10), on_played=second.append)
    speaker.pop()
    speaker.pop()
    assert (first, second) == ([FRAME_SAMPLES], [10])


def test_clear_drops_everything_queued_without_running_its_callbacks() -> None:
    speaker = Speaker()
    played: list[int] = []
    speaker.push(ramp(5 * FRAME_SAMPLES), on_played=played.append)
    speaker.pop()
    assert speaker.clear() == 4
    assert speaker.queued_frames == 0
    assert speaker.pop() is None
    assert played == [FRAME_SAMPLES]
    assert speaker.clear() == 0


def test_an_interjection_plays_next_and_the_reply_resumes_after_it() -> None:
    speaker = Speaker()
    speaker.push(np.full(3 * FRAME_SAMPLES, 1, np.int16))
    assert speaker.pop() is not None
    speaker.interject(np.full(2 * FRAME_SAMPLES, 7, np.int16))
    speaker.interject(np.full(FRAME_SAMPLES, 9, np.int16))  # behind the first interjection
    popped = []
    while (frame := speaker.pop()) is not None:
        popped.append(int(frame[0]))
    assert popped == [7, 7, 9, 1, 1]


def test_clear_drops_the_reply_but_not_an_interjection() -> None:
    speaker = Speaker()
    speaker.push(np.full(3 * FRAME_SAMPLES, 1, np.int16))
    speaker.interject(np.full(FRAME_SAMPLES, 7, np.int16))
    assert speaker.clear() == 3
    frame = speaker.pop()
    assert frame is not None and int(frame[0]) == 7
    assert speaker.pop() is None


def test_a_held_speaker_plays_nothing_and_goes_on_from_the_same_frame_when_released() -> None:
    speaker = Speaker()
    played: list[int] = []
    heard: list[int] = []
    speaker.played = lambda pcm: heard.append(int(pcm[0]))
    speaker.push(np.repeat(np.arange(1, 5, dtype=np.int16), FRAME_SAMPLES), played.append)
    assert speaker.pop()[0] == 1
    speaker.hold()
    assert [speaker.pop(), speaker.pop()] == [None, None]
    assert speaker.queued_frames == 3  # kept, not dropped
    assert played == [FRAME_SAMPLES] and heard == [1]  # nothing left while held
    speaker.release()
    assert [speaker.pop()[0], speaker.pop()[0], speaker.pop()[0]] == [2, 3, 4]
    assert heard == [1, 2, 3, 4]


def test_clear_lets_go_of_a_hold_so_the_next_reply_plays() -> None:
    speaker = Speaker()
    speaker.push(np.ones(2 * FRAME_SAMPLES, np.int16))
    speaker.hold()
    assert speaker.clear() == 2
    assert not speaker.held
    speaker.push(np.ones(FRAME_SAMPLES, np.int16))
    assert speaker.pop() is not None
