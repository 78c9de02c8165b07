"""Its own voice is not the user: the reply, heard back by the microphone 10 dB down after
100 ms (plus the transport's way there and back), never interrupts the reply, while a
user who talks over it does, within 400 ms. Real audio: the embedded voice speaks both
the reply and the user; the room gate runs with its real models (Silero, and the noise
suppressor when installed)."""

from __future__ import annotations

import numpy as np
import pytest

from app.bench.echo_probe import Duplex, Echo
from app.bench.utterances import speak
from models.piper import PiperSynthesizer
from pipeline.answer.tts import first_sound
from pipeline.conversation_options import ConversationOptions
from pipeline.events import FRAME_SAMPLES, SilenceOnset, SpeechStarted

pytestmark = pytest.mark.integration

REPLY = ("The moon is about three hundred and eighty four thousand kilometres away. It takes"
         " about twenty seven days to go around the earth, and it always shows us the same face.")
BARGE_IN_MS = ConversationOptions().barge_in_ms
"""Confirmed speech that interrupts a reply."""
HOLD_MS = ConversationOptions().hold_ms or BARGE_IN_MS
"""Confirmed speech in a started turn that holds the reply: where it goes quiet."""
AEC3_TAIL_MS = 200
"""With the canceller, the barge-in may follow the hold this much later: AEC3 still takes
the user down with our echo's last 160 ms after the reply went quiet, and a word gap
then ("What is | the tallest") left the user 20 ms short of a barge-in for 240 ms (2 of
30 first replies, the hold itself within 220 ms)."""
TRANSPORT_S = 0.06
"""The way to the client and back on loopback WebRTC, added to the room's 100 ms."""


@pytest.fixture(scope="module")
def reply(voice: PiperSynthesizer) -> np.ndarray:
    return np.concatenate(list(voice.synthesize(REPLY)))


CANCEL = pytest.mark.parametrize("cancel", [False, True], ids=["guard", "guard+aec3"])


@CANCEL
def test_the_reply_heard_back_at_minus_10_db_never_barges_in(
        reply: np.ndarray, cancel: bool) -> None:
    duplex = Duplex(reply, Echo(-10, 0.16), cancel=cancel)
    for _ in range(3):
        confirmed = duplex.play()
        assert max(confirmed) < BARGE_IN_MS
    assert not any(isinstance(e, SilenceOnset) for e in duplex.events)  # no turn either


@CANCEL
@pytest.mark.parametrize("first_reply", [True, False], ids=["first-reply", "later-reply"])
def test_a_user_talking_over_the_reply_still_interrupts_it_within_400_ms(
        reply: np.ndarray, voice: PiperSynthesizer, first_reply: bool, cancel: bool) -> None:
    """400 ms at the client is ~300 ms at the server: the rest is the transport. The reply
    goes quiet when it is held (the server sends nothing then); the barge-in that ends it
    follows (AEC3_TAIL_MS later with the canceller)."""
    duplex = Duplex(reply, Echo(-10, 0.16), cancel=cancel)
    if not first_reply:
        duplex.play()
    user = speak(voice, "What is the tallest mountain in the world?", lead_s=0, trail_s=0.3)
    confirmed = duplex.play(user, user_at_s=1.5, hold=True)
    spoke = (16000 + int(1.5 * 16000) + (first_sound(user) or 0)) // FRAME_SAMPLES
    held = next(k for k, ms in enumerate(confirmed) if ms >= HOLD_MS)
    interrupted = next(k for k, ms in enumerate(confirmed) if ms >= BARGE_IN_MS)
    assert 0 <= (held - spoke) * 20 <= 400 - 1000 * TRANSPORT_S - 40
    assert (interrupted - held) * 20 <= 2 * (BARGE_IN_MS - HOLD_MS) + (AEC3_TAIL_MS if cancel else 0)
    assert any(isinstance(e, SpeechStarted) for e in duplex.events)


HELD_BARGE_IN_MS = ConversationOptions().held_barge_in_ms or BARGE_IN_MS
"""Confirmed speech that interrupts a held reply before its words are heard."""


@pytest.mark.parametrize("phrase", ["Mm-hm.", "Okay.", "I see.", "Yeah, yeah."])
def test_a_listeners_backchannel_holds_the_reply_but_does_not_interrupt_it(
        reply: np.ndarray, voice: PiperSynthesizer, phrase: str) -> None:
    """A "mm-hm" over the reply is confirmed long enough to hold it, and for its words to be
    heard at its pause (pipeline.turn.talk_over), but not for the held reply's barge-in."""
    said = speak(voice, phrase, lead_s=0, trail_s=0.6)
    confirmed = Duplex(reply, Echo(-10, 0.16)).play(said, user_at_s=1.5, hold=True)
    assert HOLD_MS <= max(confirmed) < HELD_BARGE_IN_MS
