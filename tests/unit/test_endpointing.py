"""Adaptive endpointing: the transcript decides how much silence ends the turn."""

from __future__ import annotations

import pytest

from pipeline.endpointing import EndpointOptions, endpoint_silence_ms
from pipeline.speaker import Speaker
from tests.fakes import (
    ONSET_FRAMES,
    TEST_VAD,
    FakeResponder,
    FakeSynthesizer,
    FakeTranscriber,
    Mic,
    Workers,
    conversation,
    until,
)

OPTIONS = EndpointOptions(complete_ms=200, statement_ms=700, trailing_ms=900)


@pytest.mark.parametrize(
    "transcript",
    ["What is the capital of France?", "Stop!", "What's the weather today?"],
)
def test_a_question_ends_the_turn_after_a_short_silence(transcript: str) -> None:
    assert endpoint_silence_ms(transcript, 500, OPTIONS) == 200


@pytest.mark.parametrize("transcript", ["Tell me a joke.", "Set a timer for it."])
def test_a_statement_waits_longer_than_a_question(transcript: str) -> None:
    """Whisper ends fragments with a period too, so '.' is weaker evidence than '?'."""
    assert endpoint_silence_ms(transcript, 500, OPTIONS) == 700


@pytest.mark.parametrize(
    "transcript",
    ["Set a timer for.", "What is the capital of", "I want pizza and", "Play something by,",
     "Tell me about um", "What is the weather like in"],
)
def test_a_transcript_that_trails_off_waits_longer(transcript: str) -> None:
    assert endpoint_silence_ms(transcript, 500, OPTIONS) == 900


def test_no_transcript_or_no_punctuation_keeps_the_default() -> None:
    assert endpoint_silence_ms("", 500, OPTIONS) == 500
    assert endpoint_silence_ms("play some jazz music", 500, OPTIONS) == 500


def test_bounds_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="complete_ms"):
        EndpointOptions(complete_ms=800, statement_ms=800, trailing_ms=400)


@pytest.mark.timeout(10)
async def test_a_complete_speculative_transcript_shortens_the_endpoint(workers: Workers) -> None:
    """With 'Can you tell me a joke?' heard at onset, the turn ends after complete_ms of silence,
    long before the VAD's default endpoint."""
    models = workers.models(FakeTranscriber("Can you tell me a joke?"), FakeResponder(["Ha."]),
                            FakeSynthesizer())
    conv, _ = conversation(models, Speaker(), endpoint=EndpointOptions(
        complete_ms=100, statement_ms=200, trailing_ms=400))
    async with Mic(conv) as mic:
        await mic.send(True, 10)
        await mic.send(False, ONSET_FRAMES)
        await until(lambda: conv.endpointer.endpoint_ms == 100, what="the endpoint shortened")
        await mic.send(False, 100 // 20 - ONSET_FRAMES)
        assert conv.speculation.committed == 1
        assert TEST_VAD.endpoint_ms > 100


@pytest.mark.timeout(10)
async def test_a_trailing_transcript_survives_a_pause_longer_than_the_default(
    workers: Workers,
) -> None:
    """'Set a timer for' then a pause longer than the default endpoint: not cut off."""
    transcriber = FakeTranscriber("Set a timer for", "Set a timer for ten minutes.")
    models = workers.models(transcriber, FakeResponder(["Done."]), FakeSynthesizer())
    conv, _ = conversation(models, Speaker(), endpoint=EndpointOptions(
        complete_ms=100, statement_ms=100, trailing_ms=600))
    async with Mic(conv) as mic:
        await mic.send(True, 10)
        await mic.send(False, ONSET_FRAMES)
        await until(lambda: conv.endpointer.endpoint_ms == 600, what="the endpoint lengthened")
        await mic.send(False, TEST_VAD.endpoint_ms // 20)  # past the fixed endpoint
        assert conv.speculation.committed == 0 and conv.endpointer.speaking
        await mic.send(True, 10)  # "ten minutes"
        await mic.send(False, ONSET_FRAMES)
        await until(lambda: conv.endpointer.endpoint_ms == 100, what="the endpoint shortened")
        await mic.send(False, 5)
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert conv.turns[0].transcript == "Set a timer for ten minutes."
    assert conv.speculation.cancelled == 1


@pytest.mark.timeout(10)
async def test_live_captions_are_sent_while_the_user_speaks(workers: Workers) -> None:
    transcriber = FakeTranscriber("Tell me", "Tell me a joke.")
    models = workers.models(transcriber, FakeResponder(["Ha."]), FakeSynthesizer())
    conv, events = conversation(models, Speaker(), partial_interval_s=0.2)
    async with Mic(conv) as mic:
        await mic.send(True, 15)
        await until(lambda: any(kind == "transcript" for kind, _ in events), what="a caption")
    partial = next(data for kind, data in events if kind == "transcript")
    assert partial == {"text": "Tell me", "final": False}
