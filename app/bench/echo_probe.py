"""The echo guard offline (`make echo-probe`): how much of a user talking over a session's
first reply is heard before the reply is held, and whether the reply's echo alone ever is.

No server and no network: the room gate (pipeline.room, its real models) and the
endpointer hear a microphone that picks up the reply `delay` later, `echo_db` down,
plainly or through a reverberant room, plus — in a talk-over — a user who starts
speaking `at` seconds after the echo is first heard. Played frames are reported the way
the server's Speaker reports them: only the reply's, not the silence around it. One
reply's frames are what the room gate sees in a session's first reply, where the guard
has learned nothing yet: the hardest case (a later reply starts from what was learned).
Then a client that cancels its own echo (a browser), talked over in the first second of
its first reply, with and without saying so (`Stream.echo_cancelled`). Last, a listener's
"mm-hm" over a reply: how much of it is confirmed, against the two barge-in limits.

The replies and the user's words are the embedded Piper voice; its sampling varies run to
run, so compare two versions in one call each, paired, not against a figure from an
earlier day.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.bench.room_sounds import RoomMix, active_rms, babble, scaled
from app.bench.utterances import speak
from models.load import load_synthesizer
from models.locate import locate
from models.room import room_factory
from pipeline.answer.tts import TtsOptions, first_sound
from pipeline.audio import frames
from pipeline.conversation_options import ConversationOptions
from pipeline.events import FRAME_SAMPLES, SAMPLE_RATE, AudioFrame, Pcm
from pipeline.listen.vad import Endpointer, VadOptions
from pipeline.room import RoomOptions, Stream

HOLD_MS = ConversationOptions().hold_ms or ConversationOptions().barge_in_ms
"""Confirmed speech that holds (quiets) a reply."""
BARGE_IN_MS = ConversationOptions().barge_in_ms
"""Confirmed speech that interrupts a reply."""
HELD_BARGE_IN_MS = ConversationOptions().held_barge_in_ms or BARGE_IN_MS
"""Confirmed speech that interrupts a held reply before its words are heard."""
BACKCHANNELS = ("Mm-hm.", "Uh-huh.", "Okay.", "Yeah, yeah.", "Right.", "I see.", "Oh, okay.")
"""A listener's "go on", said over a reply: it must not interrupt it."""
REPLIES = (
    "The moon is about three hundred and eighty four thousand kilometres away, and it always"
    " shows us the same face.",
    "Once upon a time a small fox lived at the edge of a deep green forest with her brother.",
    "Paris is the capital of France. It is known for the Eiffel Tower and its long history.",
    "A rainbow forms when sunlight is bent and reflected by raindrops, splitting into colours.",
)
USER = "What is the tallest mountain in the world?"
LEAD_S = 1.0
"""Room before the reply starts (the user's question has just ended)."""


@dataclass(frozen=True)
class Echo:
    db: float = -10.0
    delay_s: float = 0.16
    rt60_s: float = 0.0


class Duplex:
    """A server whose reply frames leave at 20 ms ticks and whose microphone hears them
    `echo.delay_s` later, `echo.db` down (through the room if `echo.rt60_s`), plus
    whatever the user says and the `room` (int16 scale, looped). `report_silence`: the
    silence around the reply is reported as played too (a transport that reports every
    frame it sends)."""

    def __init__(self, reply: Pcm, echo: Echo = Echo(), *, cancel: bool = False,
                 report_silence: bool = True, room: np.ndarray | None = None,
                 stream: Stream | None = None) -> None:
        self.room = room_factory(RoomOptions(echo_cancel=cancel))(stream or Stream())
        self.endpointer = Endpointer(VadOptions(), room=self.room)
        self.reply = reply
        self.echo = echo
        self.report_silence = report_silence
        self.background = room
        self.t = 0.0
        self.events: list[object] = []

    def play(self, user: Pcm | None = None, user_at_s: float = 0.0, *,
             hold: bool = False) -> list[int]:
        """Play the reply once (with a second of room either side); the confirmed speech
        (ms) after each frame. The user starts `user_at_s` into the reply as played.
        `hold`: the reply goes quiet once HOLD_MS of speech is confirmed, as the server's
        Speaker sends (and reports) nothing while a reply is held."""
        lead = int(LEAD_S * SAMPLE_RATE)
        far = np.concatenate([np.zeros(lead, np.int16), self.reply,
                              np.zeros(SAMPLE_RATE, np.int16)])
        far = far[: len(far) // FRAME_SAMPLES * FRAME_SAMPLES]
        near = np.zeros(len(far), np.float64)
        if user is not None:
            at = lead + int(user_at_s * SAMPLE_RATE)
            near[at : at + len(user)] += user[: len(near) - at]
        if self.background is not None:
            near += np.resize(self.background, len(near))
        said = np.clip(near, -32768, 32767).astype(np.int16)
        mix = RoomMix(None, echo_db=self.echo.db, echo_delay_s=self.echo.delay_s,
                      echo_rt60_s=self.echo.rt60_s)
        reply_frames = range(lead // FRAME_SAMPLES, (lead + len(self.reply)) // FRAME_SAMPLES)
        confirmed: list[int] = []
        for k, (played, frame) in enumerate(zip(frames(far), frames(said), strict=True)):
            quiet = hold and bool(confirmed) and confirmed[-1] >= HOLD_MS
            played = np.zeros_like(played) if quiet else played
            self.t += 0.02
            if self.report_silence or (k in reply_frames and not quiet):
                self.room.played(played, self.t - 0.02)
            mix.heard(played)
            self.events += self.endpointer.push(AudioFrame(mix.mix(frame), self.t))
            confirmed.append(self.endpointer.confirmed_ms)
        return confirmed


def talk_over(reply: Pcm, user: Pcm, echo: Echo, after_s: float,
              room: np.ndarray | None = None, stream: Stream | None = None) -> int | None:
    """The user's speech (ms) heard before a session's first reply is held, the user
    starting `after_s` after its echo is first heard; None if it never is."""
    duplex = Duplex(reply, echo, report_silence=False, room=room, stream=stream)
    at_s = echo.delay_s + after_s
    confirmed = duplex.play(user, user_at_s=at_s)
    spoke = (int((LEAD_S + at_s) * SAMPLE_RATE) + (first_sound(user) or 0)) // FRAME_SAMPLES
    held = next((k for k, ms in enumerate(confirmed) if ms >= HOLD_MS), None)
    return None if held is None else max(0, held - spoke) * 20


def echo_alone(reply: Pcm, echo: Echo) -> int:
    """The most speech (ms) confirmed while a session's first reply plays with its echo."""
    return max(Duplex(reply, echo, report_silence=False).play())


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m app.bench.echo_probe", description=__doc__)
    parser.add_argument("--after", type=float, nargs="+", default=[0.6, 0.8, 1.0, 1.2, 1.5],
                        help="talk-overs this many seconds after the echo is first heard")
    args = parser.parse_args(argv)
    voice = load_synthesizer(locate("tts").path, TtsOptions())
    replies = [np.concatenate(list(voice.synthesize(text))) for text in REPLIES]
    user = speak(voice, USER, lead_s=0, trail_s=0.3)
    talk = babble(load_synthesizer(locate("tts").path, TtsOptions(stream=False)), 30,
                  np.random.default_rng(5))
    for name, room in (("", None), (", talk 15 dB down", scaled(talk, active_rms(user), 15) * 32768.0)):
        report_talk_overs(replies, user, args.after, name, room)
    report_echo_alone(replies)
    report_cancelling_client(replies, user, scaled(talk, active_rms(user), 15) * 32768.0)
    report_backchannels(replies[:2])


def report_talk_overs(replies: list[Pcm], user: Pcm, after: Sequence[float], name: str,
                      room: np.ndarray | None) -> None:
    heard: list[int | None] = []
    for reply, delay, rt60, after_s in itertools.product(replies, (0.16, 0.4), (0.0, 0.4),
                                                          after):
        heard.append(talk_over(reply, user, Echo(-10, delay, rt60), after_s, room))
    held = [ms for ms in heard if ms is not None]
    median = statistics.median(held) if held else float("nan")
    print(f"talk-overs of a first reply, echo -10 dB{name}: {len(held)} of {len(heard)} held,"
          f" after a median {median:.0f} ms of speech; {sum(ms <= 300 for ms in held)} within"
          " 300 ms")


def report_echo_alone(replies: list[Pcm]) -> None:
    worst = [echo_alone(reply, Echo(db, delay, rt60)) for reply, db, delay, rt60 in
             itertools.product(replies, (0.0, -6.0, -10.0), (0.16, 0.3, 0.5), (0.0, 0.4))]
    print(f"the echo alone ({len(worst)} first replies, 0 to -10 dB): {max(worst)} ms of"
          f" speech confirmed at most, {sum(ms >= HOLD_MS for ms in worst)} held")



EARLY_S = (0.0, 0.2, 0.4, 0.6, 0.9, 1.3)
"""How far into a session's first reply a user talks over it, for a client that cancels its
own echo: within the first second, before the guard has learned the room."""


def report_cancelling_client(replies: list[Pcm], user: Pcm, talk: np.ndarray) -> None:
    """A client that cancels its own echo (what is left of it -45 dB), talked over early in
    a session's first reply, saying so or not (Stream.echo_cancelled); and a client that
    says so but lets its echo through."""
    for said, (name, room) in itertools.product((False, True),
                                                 (("", None), (", talk 15 dB down", talk))):
        heard = [talk_over(reply, user, Echo(-45.0, 0.16), at - 0.16, room,
                           Stream(echo_cancelled=said))
                 for reply, at in itertools.product(replies, EARLY_S)]
        held = [ms for ms in heard if ms is not None]
        median = statistics.median(held) if held else float("nan")
        print(f"a client that cancels its echo, {'saying so' if said else 'silent'}{name},"
              f" talked over 0-1.3 s into its first reply: {len(held)} of {len(heard)} held,"
              f" median {median:.0f} ms; {sum(ms <= 300 for ms in held)} within 300 ms")
    for db in (0.0, -10.0):
        worst = [max(Duplex(reply, Echo(db, delay, rt60), report_silence=False,
                            stream=Stream(echo_cancelled=True)).play())
                 for reply, delay, rt60 in itertools.product(replies, (0.16, 0.3, 0.5), (0.0, 0.4))]
        print(f"a client that says so but lets its echo through at {db:.0f} dB, the echo alone"
              f" ({len(worst)} first replies): {sum(ms >= HOLD_MS for ms in worst)} held,"
              f" {sum(ms >= BARGE_IN_MS for ms in worst)} reach the barge-in,"
              f" {sum(ms >= HELD_BARGE_IN_MS for ms in worst)} a held reply's (its words are"
              " heard first: the reply's own go on)")


def report_backchannels(replies: list[Pcm]) -> None:
    """A listener's backchannel said over a reply (1.5 s into it; the voice at three
    speaking rates, echo -45 and -10 dB): the most speech confirmed in it, against the
    barge-in (a reply not held) and the held reply's barge-in (its words are heard first)."""
    path = locate("tts").path
    voices = [load_synthesizer(path, TtsOptions(length_scale=rate)) for rate in (0.85, 1.0, 1.2)]
    peaks: list[int] = []
    for phrase, voice, reply, db in itertools.product(BACKCHANNELS, voices, replies, (-45.0, -10.0)):
        said = speak(voice, phrase, lead_s=0, trail_s=0.6)
        confirmed = Duplex(reply, Echo(db, 0.16), report_silence=False).play(said, 1.5, hold=True)
        start = int((LEAD_S + 1.5) * SAMPLE_RATE) // FRAME_SAMPLES
        peaks.append(max(confirmed[start:]))
    print(f"backchannels over a reply ({len(peaks)}: {', '.join(BACKCHANNELS)}): confirmed"
          f" {min(peaks)}-{max(peaks)} ms, median {statistics.median(peaks):.0f};"
          f" {sum(ms >= BARGE_IN_MS for ms in peaks)} reach the barge-in ({BARGE_IN_MS} ms),"
          f" {sum(ms >= HELD_BARGE_IN_MS for ms in peaks)} a held reply's ({HELD_BARGE_IN_MS} ms)")


if __name__ == "__main__":
    main()
