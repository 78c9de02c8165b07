"""The offer's `processing`: what the browser says it did to its microphone decides whether
the server suppresses noise again and how loud an echo the guard starts from; anything else
in it is refused with a reason."""

from __future__ import annotations

import pytest

from app.security.limits import Refused
from app.server import _stream
from pipeline.room import Stream


def test_a_browser_that_suppressed_noise_is_not_suppressed_again() -> None:
    assert _stream({"noiseSuppression": True, "echoCancellation": True}).processed
    assert not _stream({"noiseSuppression": False, "autoGainControl": True}).processed
    assert _stream({}) == Stream() == _stream(None)  # a client that says nothing: raw audio
    assert not _stream({"noiseSuppression": True}).speech_at_once  # a page opens first


def test_a_browser_that_cancels_its_echo_says_so_to_the_echo_guard() -> None:
    assert _stream({"noiseSuppression": False, "echoCancellation": True}).echo_cancelled
    assert not _stream({"noiseSuppression": True, "echoCancellation": False}).echo_cancelled
    assert not _stream(None).echo_cancelled


@pytest.mark.parametrize("processing", ["yes", [], {"noiseSuppression": 1},
                                        {"noiseSuppression": "true"}, {"gain": True}])
def test_anything_else_is_refused_with_a_reason(processing: object) -> None:
    with pytest.raises(Refused) as refused:
        _stream(processing)
    assert refused.value.status == 400 and "processing" in str(refused.value)
