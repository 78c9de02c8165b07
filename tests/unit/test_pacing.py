"""Real-time pacing (app.transports.pacing): frames leave 20 ms apart on one schedule, their pts
counting samples; a short stall is caught up, a long one restarts the schedule instead of
bursting; the tracks and the bench microphone take the frame that leaves as it leaves."""

from __future__ import annotations

import asyncio

import av
import numpy as np
import pytest

from app.transports.client_audio import MicQueue
from app.transports.pacing import FrameClock, Pacer
from app.transports.webrtc.client import MicTrack
from app.transports.webrtc.tracks import SpeakerTrack, audio_frame
from pipeline.events import FRAME_SAMPLES
from pipeline.speaker import Speaker


class FakeTime:
    """A clock that moves only when a sender sleeps on it, or a test stalls it."""

    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += seconds

    def clock(self, rate: int = 16_000, frame_samples: int | None = None) -> FrameClock:
        return FrameClock(rate, frame_samples, clock=self, sleep=self.sleep)


async def ticks(clock: FrameClock, time: FakeTime, n: int) -> list[tuple[float, int]]:
    """(time it left, pts) of the next `n` frames."""
    out = []
    for _ in range(n):
        pts = await clock.tick()
        out.append((time.t, pts))
    return out


async def test_frames_leave_20_ms_apart_with_pts_counting_320_samples_at_16_khz() -> None:
    time = FakeTime()
    sent = await ticks(time.clock(), time, 5)
    assert [t - 100.0 for t, _ in sent] == pytest.approx([0.0, 0.02, 0.04, 0.06, 0.08])
    assert [pts for _, pts in sent] == [0, 320, 640, 960, 1280]


async def test_at_48_khz_the_pts_steps_by_960_and_a_chunk_size_sets_the_beat() -> None:
    time = FakeTime()
    assert [pts for _, pts in await ticks(time.clock(48_000), time, 3)] == [0, 960, 1920]
    time = FakeTime()
    sent = await ticks(time.clock(16_000, 1024), time, 3)  # Wyoming's 64 ms chunks
    assert [t - 100.0 for t, _ in sent] == pytest.approx([0.0, 0.064, 0.128])


async def test_a_short_stall_is_caught_up_and_the_schedule_kept() -> None:
    time = FakeTime()
    clock = time.clock()
    await ticks(clock, time, 2)  # frames 0 and 1, at 100.00 and 100.02
    time.t += 0.1  # the loop was busy: frames 2-6 are due by 100.12
    sent = await ticks(clock, time, 7)
    left = [round((t - 100.0) * 1000) for t, _ in sent]
    assert left == [120, 120, 120, 120, 120, 140, 160]  # 5 at once (100 ms), then on the beat


async def test_a_long_stall_restarts_the_schedule_instead_of_bursting() -> None:
    time = FakeTime()
    clock = time.clock()
    await ticks(clock, time, 2)
    time.t += 1.0  # 50 frames late
    sent = await ticks(clock, time, 4)
    left = [round((t - 100.0) * 1000) for t, _ in sent]
    assert left == [1020, 1040, 1060, 1080]  # one frame now, then 20 ms apart: no burst
    assert [pts for _, pts in sent] == [640, 960, 1280, 1600]  # the audio stays continuous


async def test_a_stall_at_the_limit_bursts_no_more_than_the_limit() -> None:
    time = FakeTime()
    clock = time.clock()
    await ticks(clock, time, 1)
    time.t += 0.21  # frame 1 (due at 100.02) is 190 ms late: within STALL_S (200 ms)
    sent = await ticks(clock, time, 12)
    at_once = sum(1 for t, _ in sent if t == sent[0][0])
    assert at_once == 10  # frames 1-10 were due: the burst is the stall, never more
    assert [t - 100.0 for t, _ in sent[10:]] == pytest.approx([0.22, 0.24])  # then on the beat


async def test_a_cancelled_tick_neither_counts_a_frame_nor_moves_the_schedule() -> None:
    clock = FrameClock()  # the real clock: the second tick sleeps ~20 ms
    assert await clock.tick() == 0
    waiting = asyncio.create_task(clock.tick())
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert await clock.tick() == 320


def test_the_pacer_keeps_one_schedule_with_a_lead() -> None:
    pacer = Pacer(lead_s=0.04)
    assert pacer.wait_s(10.0) == 0  # the first frame goes at once
    pacer.sent(10.0)
    assert pacer.wait_s(10.0) == 0  # within the lead: 20 ms ahead is allowed
    pacer.sent(10.0)
    pacer.sent(10.0)
    assert pacer.wait_s(10.0) == pytest.approx(0.02)  # frame 3 is due at 10.06 - 0.04
    pacer.sent(10.5)  # late (a slow clause): no burst to catch up beyond the lead
    assert pacer.wait_s(10.5) == 0


def test_the_pacer_resyncs_after_a_stall_and_restarts_when_idle() -> None:
    pacer = Pacer(lead_s=0.0)
    pacer.sent(0.0)
    pacer.sent(1.0)  # the loop stalled for a second
    assert pacer.wait_s(1.0) == pytest.approx(0.02)
    pacer.idle()
    assert not pacer.running and pacer.wait_s(5.0) == 0


def test_an_audio_frame_carries_its_pts_in_samples_and_opus_sees_960_per_20_ms() -> None:
    frame = audio_frame(np.arange(FRAME_SAMPLES, dtype=np.int16), 640)
    assert (frame.pts, frame.sample_rate, frame.samples) == (640, 16_000, FRAME_SAMPLES)
    assert float(frame.time_base * frame.pts) == pytest.approx(0.04)
    assert np.array_equal(frame.to_ndarray()[0], np.arange(FRAME_SAMPLES))
    # aiortc's Opus encoder resamples to 48 kHz stereo in 960-sample frames, as here:
    opus_side = av.AudioResampler(format="s16", layout="stereo", rate=48_000, frame_size=960)
    out = [f for k in range(6) for f in opus_side.resample(
        audio_frame(np.zeros(FRAME_SAMPLES, np.int16), k * FRAME_SAMPLES))]
    assert [f.pts for f in out] == [960 * k for k in range(len(out))] and len(out) >= 4


async def test_the_speaker_track_pops_the_speaker_as_each_frame_leaves() -> None:
    time = FakeTime()
    speaker = Speaker()
    speaker.push(np.full(FRAME_SAMPLES + 10, 7, np.int16))
    track = SpeakerTrack(speaker, time.clock())
    frames = [await track.recv() for _ in range(3)]
    assert [f.pts for f in frames] == [0, 320, 640]
    assert [int(f.to_ndarray()[0].max()) for f in frames] == [7, 7, 0]  # then silence
    assert time.t == pytest.approx(100.04)


async def test_the_mic_sends_queued_frames_in_turn_and_marks_the_one_holding_speech_end() -> None:
    time = FakeTime()
    track = MicTrack(clock=time.clock())
    pcm = np.arange(1, 2 * FRAME_SAMPLES + 11, dtype=np.int16)
    mark = track.say(pcm, mark_sample=FRAME_SAMPLES + 5)  # in the second frame
    first = await track.recv()
    assert not mark.done() and not track.idle
    second = await track.recv()
    assert mark.done()
    third, after = await track.recv(), await track.recv()
    assert track.idle
    assert [f.pts for f in (first, second, third, after)] == [0, 320, 640, 960]
    sent = np.concatenate([f.to_ndarray()[0] for f in (first, second, third)])
    assert np.array_equal(sent[: len(pcm)], pcm) and not sent[len(pcm) :].any()  # padded
    assert not after.to_ndarray().any()  # silence once the queue is empty


async def test_a_mic_queue_marks_the_last_frame_by_default_at_any_frame_size() -> None:
    queue = MicQueue(480)  # 20 ms at 24 kHz
    mark = queue.say(np.ones(1000, np.int16))
    assert [len(queue.pop()) for _ in range(2)] == [480, 480] and not mark.done()
    last = queue.pop()
    assert mark.done() and len(last) == 480 and last[40:].sum() == 0
    assert queue.idle and not queue.pop().any()
