"""Adaptive endpointing: the transcript decides how much silence ends the turn."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from models.llama_internals import CHATML
from models.turn_detector import PLAIN, LlamaTurnDetector, TurnPrompt
from pipeline.answer.model_calls import Models
from pipeline.compute.workers import CpuLock
from pipeline.conversation_events import Transcript
from pipeline.events import Pcm
from pipeline.listen.endpointing import EndpointOptions, endpoint_silence_ms, trails_off
from pipeline.listen.turn_detector import normalise
from pipeline.skills import SkillContext, SkillReply, Skills
from pipeline.speaker import Speaker
from tests.fakes import (
    ENDPOINT_FRAMES,
    ONSET_FRAMES,
    TEST_VAD,
    FakeDetector,
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


@pytest.mark.parametrize(("transcript", "trails"), [
    ("Set a timer for.", True), ("Add eggs and,", True), ("Remind me to buy…", True),
    ("Set a timer for ten minutes.", False), ("What is the capital of Spain?", False), ("", False),
])
def test_words_that_stop_on_a_trailing_word_or_comma_trail_off(transcript: str,
                                                                trails: bool) -> None:
    assert trails_off(transcript) is trails


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
        await until(lambda: conv.endpoint_ms == 100, what="the endpoint shortened")
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
        await until(lambda: conv.endpoint_ms == 600, what="the endpoint lengthened")
        await mic.send(False, TEST_VAD.endpoint_ms // 20)  # past the fixed endpoint
        assert conv.speculation.committed == 0 and conv.endpointer.speaking
        await mic.send(True, 10)  # "ten minutes"
        await mic.send(False, ONSET_FRAMES)
        await until(lambda: conv.endpoint_ms == 100, what="the endpoint shortened")
        await mic.send(False, 5)
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert conv.turns[0].transcript == "Set a timer for ten minutes."
    assert conv.speculation.cancelled == 1


@pytest.mark.timeout(10)
async def test_a_fragment_whisper_calls_a_question_waits_for_the_rest(workers: Workers) -> None:
    """'What is the capital?' is a fragment to the turn detector: the '?' does not end the
    turn, the pause is waited out, and the whole question becomes one turn."""
    transcriber = FakeTranscriber("What is the capital?", "What is the capital of Spain?")
    detector = FakeDetector({"What is the capital?": -23.0, "What is the capital of Spain?": -4.7},
                            delay_s=0.02)
    models = workers.models(transcriber, FakeResponder(["Madrid."]), FakeSynthesizer(), detector)
    conv, _ = conversation(models, Speaker(), endpoint=EndpointOptions(
        complete_ms=100, statement_ms=300, trailing_ms=600))
    async with Mic(conv) as mic:
        await mic.send(True, 10)
        await mic.send(False, ONSET_FRAMES)
        await until(lambda: conv.endpoint_ms == 600, what="the endpoint lengthened")
        await mic.send(False, 400 // 20)  # longer than the '?' rule's 100 ms, and the default
        assert conv.speculation.committed == 0 and conv.endpointer.speaking
        await mic.send(True, 10)  # "of Spain"
        await mic.send(False, ONSET_FRAMES)
        await until(lambda: conv.endpoint_ms == 100, what="the endpoint shortened")
        await mic.send(False, 5)
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert conv.turns[0].transcript == "What is the capital of Spain?"
    assert detector.asked == ["What is the capital?", "What is the capital of Spain?"]
    assert set(detector.threads) == {"apace-turn"}  # its own worker, not the loop or the LLM's


@pytest.mark.timeout(10)
async def test_punctuation_alone_does_not_end_the_turn_while_the_verdict_is_pending(
    workers: Workers,
) -> None:
    detector = FakeDetector({"Can you tell me a joke?": -3.0}, delay_s=0.3)
    models = workers.models(FakeTranscriber("Can you tell me a joke?"), FakeResponder(["Ha."]),
                            FakeSynthesizer(), detector)
    conv, _ = conversation(models, Speaker(), endpoint=EndpointOptions(
        complete_ms=100, statement_ms=200, trailing_ms=400))
    async with Mic(conv) as mic:
        await mic.send(True, 10)
        await mic.send(False, ONSET_FRAMES)
        await until(lambda: bool(models.transcriber.calls), what="the transcript")
        await asyncio.sleep(0.05)
        assert conv.endpoint_ms == TEST_VAD.endpoint_ms  # not the '?' rule's 100
        await until(lambda: conv.endpoint_ms == 100, what="the verdict")
        await mic.send(False, 100 // 20)
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert conv.turns[0].transcript == "Can you tell me a joke?"


class _Answer:
    """A skill that answers every request with `text`."""

    name = "timer"

    def __init__(self, text: str) -> None:
        self.text = text

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        refusal = self.text.startswith("I can't")
        return SkillReply(self.text, "offline" if refusal else self.name, refusal=refusal)


def _ordered_models(workers: Workers, order: list[str], pieces: list[str]) -> Models:
    """Models that log, in order, each LLM token, each audio chunk and the detector's
    question and verdict."""

    class Responder(FakeResponder):
        def reply(self, history: Any, user: str, draft: str | None = None) -> Iterator[str]:
            for piece in super().reply(history, user, draft):
                order.append("token")
                yield piece

    class Synthesizer(FakeSynthesizer):
        def synthesize(self, text: str) -> Iterator[Pcm]:
            for pcm in super().synthesize(text):
                order.append("audio")
                yield pcm

    class Detector(FakeDetector):
        def done_logprob(self, text: str) -> float:
            order.append("asked")
            verdict = super().done_logprob(text)
            order.append("verdict")
            return verdict

    return workers.models(FakeTranscriber("What is the capital of Spain?"),
                          Responder(pieces, delay_s=0.01), Synthesizer(delay_s=0.01),
                          Detector({"What is the capital of Spain?": -3.0}, delay_s=0.2),
                          cpu=CpuLock())


async def _ordered_turn(workers: Workers, *, early_verdict: bool) -> tuple[list[str], list[str]]:
    order: list[str] = []
    pieces = ["Madrid", " is", " the", " capital.", " It", " is", " big."]
    models = _ordered_models(workers, order, pieces)
    conv, _ = conversation(models, Speaker(), early_verdict=early_verdict,
                           endpoint=EndpointOptions(complete_ms=100, statement_ms=300,
                                                    trailing_ms=600))
    async with Mic(conv) as mic:
        await mic.send(True, 10)
        await mic.send(False, ONSET_FRAMES)
        await until(lambda: "verdict" in order, what="the verdict")
        await mic.send(False, 100 // 20)
        await mic.play_until(lambda: len(conv.turns) == 1)
    assert order.count("token") == len(pieces) and order.count("audio") == 7
    assert conv.turns[0].reply == "".join(pieces)
    return order, pieces


@pytest.mark.timeout(10)
async def test_the_detector_is_asked_before_the_llm_reads_and_clause_one_waits_for_it(
    workers: Workers,
) -> None:
    """By default the verdict comes first, so a finished turn's endpoint need not wait for
    the LLM's first clause; clause 1's audio is still made only after the verdict."""
    order, _ = await _ordered_turn(workers, early_verdict=True)
    assert order[:2] == ["asked", "verdict"]  # before any token, the LLM waiting its turn
    assert order.index("verdict") < order.index("audio")


@pytest.mark.timeout(10)
async def test_a_late_verdict_is_asked_once_clause_one_is_written_and_its_audio_waits(
    workers: Workers,
) -> None:
    """--late-verdict: the detector runs once clause 1 is written, and clause 1's audio is
    made after its verdict: meanwhile nothing else starts."""
    order, _ = await _ordered_turn(workers, early_verdict=False)
    asked = order.index("asked")
    assert order[:asked].count("token") >= 4 and "audio" not in order[:asked]  # clause 1 first
    meanwhile = order[asked + 1 : order.index("verdict")]
    assert "audio" not in meanwhile and meanwhile.count("token") <= 1  # (one in flight)


@pytest.mark.timeout(10)
async def test_live_captions_are_sent_while_the_user_speaks(workers: Workers) -> None:
    transcriber = FakeTranscriber("Tell me", "Tell me a joke.")
    models = workers.models(transcriber, FakeResponder(["Ha."]), FakeSynthesizer())
    conv, events = conversation(models, Speaker(), partial_interval_s=0.2)
    async with Mic(conv) as mic:
        await mic.send(True, 15)
        await until(lambda: any(isinstance(e, Transcript) for e in events), what="a caption")
    partial = next(e for e in events if isinstance(e, Transcript))
    assert partial == Transcript("Tell me", final=False)


@pytest.mark.parametrize(
    ("transcript", "done_logprob", "silence_ms"),
    [
        ("What is the capital?", -15.9, 900),  # a fragment Whisper punctuated: wait
        ("Set a timer for ten minutes.", -3.6, 200),  # a finished statement: no 700 ms wait
        ("play some jazz music", -3.4, 200),
        ("What time is it?", -8.2, 700),  # unsure: the middle band
        ("What is gravity?", -6.6, 200),  # plain log P(end) -12.6 put it in the band
        ("What is the weather like", -2.0, 900),  # a trailing word Whisper left open wins
        # A closed sentence ending in one: the detector decides (real scores).
        ("Send a message to all of you.", -8.1, 700),
        ("Turn it on.", -5.7, 200),
        ("Where are you from?", -5.1, 200),
        ("Set a timer for.", -16.2, 900),
        ("Can you?", -19.5, 900),
    ],
)
def test_the_turn_detectors_verdict_replaces_punctuation(
    transcript: str, done_logprob: float, silence_ms: int
) -> None:
    assert endpoint_silence_ms(transcript, 500, OPTIONS, done_logprob=done_logprob) == silence_ms


@pytest.mark.parametrize(
    ("transcript", "done_logprob", "pending", "silence_ms"),
    [
        ("Cancel the pasta timer.", -18.0, False, 200),  # the detector unsure: the skill is not
        ("What day is it today?", None, True, 200),  # no need to wait for the verdict
        ("Set a timer for", -6.0, False, 900),  # a trailing word still waits
        ("Set a timer for ten minutes,", -3.0, False, 900),  # and so does a trailing comma
    ],
)
def test_a_request_a_skill_answers_whole_ends_the_turn_as_a_finished_one(
    transcript: str, done_logprob: float | None, pending: bool, silence_ms: int
) -> None:
    assert endpoint_silence_ms(transcript, 500, OPTIONS, done_logprob=done_logprob,
                               verdict_pending=pending, request_complete=True) == silence_ms


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("reply", "expected"),
                         [("The pasta timer is cancelled.", 100), ("Which timer?", 600),
                          ("When should I remind you? You can say: at six.", 600),
                          ("I can't check the weather: I work offline.", 600)])
async def test_a_skills_whole_answer_ends_the_turn_without_the_detectors_long_wait(
    workers: Workers, reply: str, expected: int,
) -> None:
    """The detector scores the request as unfinished (-18: the trailing wait), but a
    skill answers it whole: the turn ends after complete_ms; a skill asking back ("Which
    timer?") does not shorten the wait, nor a refusal (a topic word brings it on: "What is
    the weather light? | in Paris?" is cut at its pause)."""
    models = workers.models(FakeTranscriber("Cancel the pasta timer."), FakeResponder(["x"]),
                            FakeSynthesizer(), FakeDetector({"Cancel the pasta timer.": -18.0}))
    conv, _ = conversation(models, Speaker(), endpoint=EndpointOptions(
        complete_ms=100, statement_ms=300, trailing_ms=600))
    conv.skills = Skills([_Answer(reply)])

    def judged() -> bool:
        speculation = conv.speculating()
        return speculation is not None and speculation.done_logprob is not None

    async with Mic(conv) as mic:
        await mic.send(True, 10)
        await mic.send(False, ONSET_FRAMES)
        await until(judged, what="the verdict")
        assert conv.endpoint_ms == expected


def test_a_question_mark_does_not_end_the_turn_early_while_a_verdict_is_coming() -> None:
    """The verdict comes after the reply's first audio: meanwhile a turn ends only as an
    unsure one would (statement_ms), or at the VAD's default if that is longer."""
    assert endpoint_silence_ms("What is the capital?", 500, OPTIONS, verdict_pending=True) == 700
    assert endpoint_silence_ms("What is the capital?", 800, OPTIONS, verdict_pending=True) == 800
    assert endpoint_silence_ms("Set a timer for", 500, OPTIONS, verdict_pending=True) == 900


def test_turn_thresholds_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="turn thresholds"):
        EndpointOptions(done_logprob=-16.0, unfinished_logprob=-11.0)


class _NotChatMl:
    def __init__(self) -> None:
        self.metadata = {"tokenizer.chat_template": "{{ messages[0]['content'] }}</s>"}


def test_a_model_without_chatml_messages_cannot_be_the_turn_detector() -> None:
    with pytest.raises(ValueError, match="ChatML"):
        LlamaTurnDetector(_NotChatMl())  # type: ignore[arg-type]


class _ByteLlama:
    """A ChatML model whose tokens are bytes (<|im_end|> is one token): it records what
    it reads."""

    def __init__(self) -> None:
        self.metadata = {"tokenizer.chat_template": CHATML}
        self.read: list[int] = []

    def tokenize(self, text: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
        return [1000] if text == b"<|im_end|>" else list(text)

    def n_ctx(self) -> int:
        return 512

    def reset(self) -> None:
        self.read = []

    def eval(self, tokens: list[int]) -> None:
        self.read += tokens


def _read_text(llama: _ByteLlama) -> str:
    return bytes(t for t in llama.read if t < 256).decode()


def test_the_detector_reads_its_example_exchanges_once_before_the_users_message() -> None:
    llama = _ByteLlama()
    LlamaTurnDetector(llama, TurnPrompt(examples=(("who wrote it", "Me."), ("hi", "Hello."))))  # type: ignore[arg-type]
    assert _read_text(llama) == ("<|im_start|>user\nwho wrote it<|im_end|>\n<|im_start|>assistant"
                                 "\nMe.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>"
                                 "assistant\nHello.<|im_end|>\n<|im_start|>user\n")


def test_the_plain_prompt_reads_no_examples() -> None:
    llama = _ByteLlama()
    LlamaTurnDetector(llama, PLAIN)  # type: ignore[arg-type]
    assert _read_text(llama) == "<|im_start|>user\n"


def test_a_stop_weight_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="stop_weight"):
        TurnPrompt(stop_weight=1.5)


def test_normalising_drops_case_and_punctuation_but_keeps_apostrophes() -> None:
    assert normalise("  What's the CAPITAL?!  of, Spain.") == "what's the capital of spain"


@pytest.mark.timeout(10)
async def test_the_llm_and_detector_read_the_captions_settled_words_ahead(workers: Workers) -> None:
    transcriber = FakeTranscriber("Tell me a", "Tell me a joke.")
    responder, detector = FakeResponder(["Ha."]), FakeDetector({"Tell me a joke.": -3.0})
    models = workers.models(transcriber, responder, FakeSynthesizer(), detector)
    conv, _ = conversation(models, Speaker(), partial_interval_s=0.2)
    async with Mic(conv) as mic:
        await mic.send(True, 15)
        await until(lambda: bool(responder.read_ahead), what="the LLM reading ahead")
        await mic.send(False, ONSET_FRAMES + ENDPOINT_FRAMES)
        await mic.play_until(lambda: len(conv.turns) == 1)
    # "a" may be the start of a longer word: only the words before it are read ahead.
    assert responder.read_ahead[0] == detector.read_ahead[0] == "Tell me"
    assert conv.turns[0].transcript == "Tell me a joke."


@pytest.mark.timeout(10)
async def test_captions_are_not_read_ahead_when_that_is_off(workers: Workers) -> None:
    responder, detector = FakeResponder(["Ha."]), FakeDetector({})
    models = workers.models(FakeTranscriber("Tell me a"), responder, FakeSynthesizer(), detector)
    conv, events = conversation(models, Speaker(), partial_interval_s=0.2, prefill_captions=False)
    async with Mic(conv) as mic:
        await mic.send(True, 15)
        await until(lambda: any(isinstance(e, Transcript) for e in events), what="a caption")
        await asyncio.sleep(0.1)
    assert responder.read_ahead == [] and detector.read_ahead == []
