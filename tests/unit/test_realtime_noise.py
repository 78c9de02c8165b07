"""`session.audio.input.noise_reduction`: a Realtime client says whether it suppressed noise
itself (null); apace's room gate then does not do it again."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from app.transports.realtime.commands import session_update
from app.transports.realtime.protocol import ClientError, SessionConfig, apply_update
from pipeline.events import FRAME_SAMPLES
from pipeline.room import Room, Stream


class Halve:
    def process(self, pcm: np.ndarray) -> np.ndarray:
        return (pcm // 2).astype(np.int16)


def test_null_noise_reduction_turns_the_servers_suppression_off_and_back_on() -> None:
    room = Room(conditioner=Halve(), stream=Stream(speech_at_once=True))
    posted: list[dict[str, object]] = []
    conversation = SimpleNamespace(room=room, speak_replies=lambda spoken: None)
    session = SimpleNamespace(config=SessionConfig(), conversation=conversation,
                              post=posted.append, session_object=lambda: {})
    frame = np.full(FRAME_SAMPLES, 1000, np.int16)
    assert (room.condition(frame) == 500).all()
    off = {"audio": {"input": {"noise_reduction": None}}}
    session_update(session, {"type": "session.update", "session": off})  # type: ignore[arg-type]
    assert room.condition(frame) is frame and posted[-1]["type"] == "session.updated"
    on = {"audio": {"input": {"noise_reduction": {"type": "far_field"}}}}
    session_update(session, {"type": "session.update", "session": on})  # type: ignore[arg-type]
    assert (room.condition(frame) == 500).all()


@pytest.mark.parametrize("value", ["near_field", {"type": "studio"}, {}, 1])
def test_anything_else_is_a_client_error_naming_the_field(value: object) -> None:
    with pytest.raises(ClientError) as error:
        apply_update(SessionConfig(), {"audio": {"input": {"noise_reduction": value}}})
    assert "noise_reduction" in str(error.value.param)
