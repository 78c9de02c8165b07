"""Echo cancellation keeps what was played and what the microphone hears on one clock:
each 10 ms of microphone audio is processed after exactly 10 ms of playback (silence when
nothing was played), in order, with a bounded wait; the room runs it before anything else
listens, and frees it when the stream ends."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from models.echo_cancel import load_canceller
from models.locate import ModelError
from models.room import room_factory
from pipeline.room import Room, RoomOptions
from pipeline.room.cancel import SUB_FRAME, Cancellation
from pipeline.room.conditioning import condition


class Recorder:
    """A fake canceller: logs every call; subtracts the far end it was given `lag`
    capture calls ago (an echo path of `lag` times 10 ms, cancelled exactly)."""

    def __init__(self, lag: int = 0) -> None:
        self.calls: list[tuple[str, int]] = []
        self.far: list[np.ndarray] = []
        self.lag = lag
        self.closed = 0

    def render(self, pcm: np.ndarray) -> None:
        assert len(pcm) == SUB_FRAME
        self.calls.append(("render", int(pcm[0])))
        self.far.append(pcm.copy())

    def capture(self, pcm: np.ndarray) -> np.ndarray:
        assert len(pcm) == SUB_FRAME
        self.calls.append(("capture", int(pcm[0])))
        k = len(self.far) - 1 - self.lag
        echo = self.far[k] if k >= 0 else np.zeros(SUB_FRAME, np.int16)
        return (pcm.astype(np.int32) - echo).astype(np.int16)

    def close(self) -> None:
        self.closed += 1


def frame(*values: int) -> np.ndarray:
    """A 20 ms frame whose 10 ms halves are filled with `values`."""
    return np.concatenate([np.full(SUB_FRAME, v, np.int16) for v in values])


def test_each_10_ms_of_microphone_follows_one_10_ms_of_playback_in_order() -> None:
    fake = Recorder()
    cancel = Cancellation(fake)
    cancel.played(frame(1, 2))
    cancel.played(frame(3, 4))
    cancel.cancel(frame(100, 101))
    cancel.cancel(frame(102, 103))
    cancel.cancel(frame(104, 105))  # nothing left to pair with: silence is rendered
    assert fake.calls == [("render", 1), ("capture", 100), ("render", 2), ("capture", 101),
                          ("render", 3), ("capture", 102), ("render", 4), ("capture", 103),
                          ("render", 0), ("capture", 104), ("render", 0), ("capture", 105)]


def test_the_echo_path_is_the_microphones_lag_behind_playback() -> None:
    """Playback and its echo 60 ms later, on the two clocks: the canceller sees the echo
    exactly 6 of its frames after the far end it pairs with."""
    fake = Recorder(lag=6)
    cancel = Cancellation(fake)
    rng = np.random.default_rng(0)
    far = [rng.integers(-3000, 3000, 2 * SUB_FRAME).astype(np.int16) for _ in range(20)]
    heard = [np.zeros(2 * SUB_FRAME, np.int16)] * 3 + far[:-3]  # 3 frames (60 ms) late
    out = []
    for played, mic in zip(far, heard, strict=True):
        cancel.played(played)
        out.append(cancel.cancel(mic))
    assert not np.any(np.concatenate(out))


def test_playback_waits_at_most_a_second_for_a_microphone_that_stopped() -> None:
    fake = Recorder()
    cancel = Cancellation(fake, max_queued_s=1.0)
    for k in range(75):  # 1.5 s played while the microphone sent nothing
        cancel.played(frame(k, k))
    assert cancel.queued_ms == 1000
    assert cancel.dropped == 50
    cancel.cancel(frame(0, 0))
    assert fake.calls[0] == ("render", 25)  # the oldest half second was let go


def test_a_short_last_frame_is_padded_for_the_canceller_and_cut_back() -> None:
    fake = Recorder()
    cancel = Cancellation(fake)
    out = cancel.cancel(np.full(SUB_FRAME + 40, 7, np.int16))
    assert len(out) == SUB_FRAME + 40


def test_the_room_cancels_before_it_suppresses_and_frees_the_canceller() -> None:
    fake = Recorder()

    class Halve:
        def process(self, pcm: np.ndarray) -> np.ndarray:
            return (pcm // 2).astype(np.int16)

    room = Room(RoomOptions(always_suppress=True, echo_cancel=True), conditioner=Halve(),
                canceller=fake)
    room.played(frame(1000, 1000))
    heard = room.condition(frame(1600, 1600))
    assert np.all(heard == 300)  # (1600 - 1000) / 2: the echo out first, then halved
    assert np.array_equal(heard, condition(Halve(), frame(600, 600)))
    room.close()
    room.close()
    assert fake.closed == 1
    assert np.array_equal(room.condition(frame(8, 8)), frame(4, 4))  # closed: passed on


def test_the_room_cancels_nothing_when_told_not_to() -> None:
    fake = Recorder()
    room = Room(RoomOptions(echo_cancel=False), canceller=fake)
    room.played(frame(1000, 1000))
    assert np.all(room.condition(frame(1600, 1600)) == 1600)
    assert room.cancellation is None and not fake.calls


class Crush:
    """A fake canceller that takes everything out (AEC3 where no echo path was found)."""

    def render(self, pcm: np.ndarray) -> None:
        pass

    def capture(self, pcm: np.ndarray) -> np.ndarray:
        return np.zeros_like(pcm)

    def close(self) -> None:
        pass


def duplex(room: Room, echo_gain: float, frames: int = 90) -> np.ndarray:
    """Play white noise; the microphone hears it `echo_gain` down one frame later (0:
    nothing comes back) over a faint hiss. The room's last conditioned frame."""
    rng = np.random.default_rng(5)
    last = np.zeros(2 * SUB_FRAME, np.int16)
    heard = last
    for k in range(frames):
        t = 0.02 * (k + 1)
        played = (rng.standard_normal(2 * SUB_FRAME) * 3000).astype(np.int16)
        room.played(played, t)
        mic = (last * echo_gain + rng.standard_normal(2 * SUB_FRAME) * 3).astype(np.int16)
        heard = room.condition(mic, t)
        room.judge(heard, t, False, in_utterance=False)
        last = played
    return heard


def test_where_nothing_comes_back_the_cancellers_output_is_not_used() -> None:
    headphones = Room(RoomOptions(conditioning=False, echo_cancel=True), canceller=Crush())
    assert not duplex(headphones, 0.0, frames=5).any()  # nothing learned yet: cancelled
    assert duplex(headphones, 0.0).any()  # nothing comes back: the microphone as it came
    speakers = Room(RoomOptions(conditioning=False, echo_cancel=True), canceller=Crush())
    assert not duplex(speakers, 0.3).any()  # an echo comes back: cancelled


def test_replies_drained_in_a_burst_are_not_an_echo_reference() -> None:
    """`apace talk --fast` takes a reply's frames all at once: they are not played into a
    room, and pairing them with the microphone would cancel the user's next words."""
    fake = Recorder()
    room = Room(RoomOptions(conditioning=False, echo_cancel=True), canceller=fake)
    for _ in range(30):
        room.played(frame(500, 500), 1.0)  # 30 frames in the same instant
    assert room.cancellation is not None
    assert room.cancellation.queued_ms == 0



async def test_a_conversation_that_ends_frees_its_rooms_canceller() -> None:
    from pipeline.room import Stream
    from pipeline.speaker import Speaker
    from tests.transports import fake_engine

    fake = fake_engine()
    made: list[Recorder] = []

    def make_room(stream: Stream) -> Room:
        made.append(Recorder())
        return Room(RoomOptions(echo_cancel=True), canceller=made[-1], stream=stream)

    fake.engine.make_room = make_room
    try:
        async with fake.engine.open(Speaker()) as conversation:
            assert conversation.room is not None and conversation.room.cancellation is not None
            assert made[0].closed == 0
        assert made[0].closed == 1
    finally:
        fake.close()


def test_asking_for_cancellation_without_its_package_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "livekit.rtc", None)  # as if livekit were missing
    with pytest.raises(ModelError, match=r"pip install 'apace-voice\[aec\]'"):
        load_canceller()
    with pytest.raises(ModelError, match="livekit"):
        room_factory(RoomOptions(echo_cancel=True), denoiser=None, neural_vad=False)
    room_factory(RoomOptions(), denoiser=None, neural_vad=False)  # not asked for: no error
