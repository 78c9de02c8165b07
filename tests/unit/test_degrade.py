"""Degrading on purpose under load (pipeline.compute.degrade): the pure rules, the board,
and the wiring in two conversations that share a board, with scripted models."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.observe.prometheus import Metrics
from pipeline.compute.degrade import (
    Degradation,
    DegradeOptions,
    LlmUse,
    Load,
    LoadBoard,
    decide,
    predicted_wait_s,
)
from pipeline.compute.stats import EngineStats
from pipeline.compute.workers import Priority, current_priority
from pipeline.conversation import Conversation
from pipeline.conversation_events import ConversationEvent, to_wire
from pipeline.conversation_options import ConversationOptions, TransportNeeds
from pipeline.engine import ClosableResponder, Engine
from pipeline.events import Pcm
from pipeline.skills import Timers, default_skills
from pipeline.speaker import Speaker
from tests.fakes import (
    ONSET_FRAMES,
    TEST_VAD,
    FakeResponder,
    FakeSynthesizer,
    FakeTranscriber,
    Mic,
    Workers,
    any_sound,
    until,
)

pytestmark = pytest.mark.timeout(15)

NO_SPEC, SHORT, MOMENT = Degradation.NO_SPECULATION, Degradation.SHORT, Degradation.ONE_MOMENT
LIGHT = Degradation.LIGHT
OPTIONS = DegradeOptions()


# --- the rules ---

def test_a_speculative_pass_is_held_only_while_another_confirmed_reply_is_in_flight() -> None:
    assert decide(Load(1), OPTIONS, speculative=True).tags == {NO_SPEC}
    assert decide(Load(0), OPTIONS, speculative=True).tags == frozenset()
    assert decide(Load(1), DegradeOptions(speculate_below=2), speculative=True).tags == frozenset()


def test_a_confirmed_reply_is_short_while_others_are_in_flight_with_the_caps() -> None:
    plan = decide(Load(1), OPTIONS, speculative=False)
    assert SHORT in plan.tags and NO_SPEC not in plan.tags
    assert (plan.sentences, plan.words) == (1, OPTIONS.short_words)
    alone = decide(Load(0), OPTIONS, speculative=False)
    assert alone.tags == frozenset() and alone.sentences is None and alone.words is None
    assert SHORT not in decide(Load(1), DegradeOptions(short_from=2), speculative=False).tags


def test_one_moment_only_when_the_predicted_wait_exceeds_the_bound() -> None:
    # reply_s 0.6 each: ours alone 0.6, behind one 1.2, behind two 1.8 (> 1.5).
    assert predicted_wait_s(Load(2), OPTIONS) == pytest.approx(1.8)
    assert MOMENT not in decide(Load(1), OPTIONS, speculative=False).tags
    assert MOMENT in decide(Load(2), OPTIONS, speculative=False).tags
    # The oldest reply has waited 1.2 s without a token: ours waits at least that, and more.
    assert MOMENT in decide(Load(1, oldest_wait_s=1.2), OPTIONS, speculative=False).tags
    # A measured cost replaces the prior.
    assert MOMENT not in decide(Load(2, reply_s=0.4), OPTIONS, speculative=False).tags
    assert MOMENT not in decide(Load(2), DegradeOptions(one_moment_after_s=2.0),
                                speculative=False).tags
    assert MOMENT not in decide(Load(9), OPTIONS, speculative=True).tags  # a guess never says it


def test_the_off_switch_degrades_nothing_under_any_load() -> None:
    off = DegradeOptions(enabled=False)
    heavy = Load(5, oldest_wait_s=10.0)
    assert decide(heavy, off, speculative=True).tags == frozenset()
    plan = decide(heavy, off, speculative=False)
    assert plan.tags == frozenset() and plan.sentences is None


@pytest.mark.parametrize("bad", [dict(speculate_below=0), dict(short_sentences=0),
                                 dict(one_moment_after_s=0), dict(smoothing=0)])
def test_options_refuse_values_that_make_no_sense(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        DegradeOptions(**bad)  # type: ignore[arg-type]


class Use:
    def __init__(self, use: LlmUse | None) -> None:
        self.now = use

    def llm_use(self) -> LlmUse | None:
        return self.now


def test_the_board_counts_the_others_confirmed_replies_and_the_oldest_wait() -> None:
    board = LoadBoard()
    me = Use(LlmUse(True, 0.0, False))
    waiting, decoding = Use(LlmUse(True, 7.0, False)), Use(LlmUse(True, 5.0, True))
    for user in (me, waiting, decoding, Use(LlmUse(False, 1.0, False)), Use(None)):
        board.join(user)
    load = board.load(me, 10.0)
    assert load.others_confirmed == 2 and load.oldest_wait_s == pytest.approx(3.0)
    board.leave(waiting)
    assert board.load(me, 10.0) == Load(1, 0.0, None)
    assert board.decide(me, 10.0, speculative=True).tags == {NO_SPEC}


def test_the_board_measures_the_cost_per_reply_sharing_the_llm() -> None:
    board = LoadBoard(DegradeOptions(smoothing=0.5))
    board.measured(2.0, 1)  # 2 s shared by two replies
    assert board.load(Use(None), 0.0).reply_s == pytest.approx(1.0)
    board.measured(0.5, 0)
    assert board.load(Use(None), 0.0).reply_s == pytest.approx(0.75)


# --- the wiring: two conversations on one board ---

SLOW = ["word "] * 200
TWO_SENTENCES = ["First one is here. ", "Second one follows. ", "And a third."]


def open_conv(workers: Workers, board: LoadBoard, transcript: str | FakeTranscriber,
              responder: FakeResponder,
              synthesizer: FakeSynthesizer | None = None, *, skills: bool = False,
              spoken: bool = True, light: FakeResponder | None = None,
              ) -> tuple[Conversation, list[ConversationEvent]]:
    events: list[ConversationEvent] = []
    ear = FakeTranscriber(transcript) if isinstance(transcript, str) else transcript
    models = workers.models(ear, responder,
                            synthesizer or FakeSynthesizer(), light=light)
    options = ConversationOptions(vad=TEST_VAD, endpoint=None, partial_interval_s=None,
                                  hold_ms=None, degrade=board.options)
    conv = Conversation(models, Speaker(), options, emit=events.append,
                        needs=TransportNeeds(classify=any_sound, spoken=spoken), load=board,
                        skills=default_skills(timers=Timers(), store=None) if skills else None)
    board.join(conv)
    return conv, events


async def confirmed_in_flight(mic: Mic, responder: FakeResponder) -> None:
    """A's whole turn: its reply committed, its slow LLM still writing."""
    await mic.say()
    await until(lambda: responder.produced > 0, what="A's LLM under way")
    use = mic.conv.llm_use()
    assert use is not None and use.confirmed


async def test_no_speculation_while_another_sessions_confirmed_reply_is_in_flight(
    workers: Workers,
) -> None:
    board = LoadBoard()
    slow = FakeResponder(SLOW, delay_s=0.02)
    a, _ = open_conv(workers, board, "tell me a long story", slow)
    b_llm = FakeResponder(["Sure thing."])
    b, _ = open_conv(workers, board, "what is a fox", b_llm)
    async with Mic(a) as mic_a, Mic(b) as mic_b:
        await confirmed_in_flight(mic_a, slow)
        await mic_b.send(True, 10)
        await mic_b.send(False, ONSET_FRAMES)
        speculating = b.speculating()
        assert speculating is not None
        await until(lambda: speculating.transcript is not None, what="B's ASR ran")
        await asyncio.sleep(0.1)
        assert not b_llm.started.is_set()  # its ASR ran, its LLM did not start
        await mic_b.send(False, 20)  # the endpoint: B's turn is confirmed, its LLM runs
        await mic_b.play_until(lambda: len(b.turns) == 1)
    assert b_llm.users == ["what is a fox"]
    turn = b.turns[0]
    assert "no-speculation" in turn.degraded and "short" in turn.degraded
    assert to_wire(turn)["degraded"] == list(turn.degraded)
    assert b.stats.degraded["no-speculation"] == 1


async def test_with_the_policy_off_the_speculation_starts_under_the_same_load(
    workers: Workers,
) -> None:
    board = LoadBoard(DegradeOptions(enabled=False))
    slow = FakeResponder(SLOW, delay_s=0.02)
    a, _ = open_conv(workers, board, "tell me a long story", slow)
    b_llm = FakeResponder(["Sure thing."])
    b, _ = open_conv(workers, board, "what is a fox", b_llm)
    async with Mic(a) as mic_a, Mic(b) as mic_b:
        await confirmed_in_flight(mic_a, slow)
        await mic_b.send(True, 10)
        await mic_b.send(False, ONSET_FRAMES)
        await until(b_llm.started.is_set, what="B's speculative LLM pass")
        assert b.speculating() is not None
        await mic_b.send(False, 20)
        await mic_b.play_until(lambda: len(b.turns) == 1)
    assert b.turns[0].degraded == ()
    assert b.turns[0].reply == "Sure thing."


async def test_a_confirmed_reply_is_cut_to_one_sentence_while_another_is_in_flight(
    workers: Workers,
) -> None:
    board = LoadBoard()
    slow = FakeResponder(SLOW, delay_s=0.02)
    a, _ = open_conv(workers, board, "tell me a long story", slow)
    b, _ = open_conv(workers, board, "tell me about foxes", FakeResponder(TWO_SENTENCES))
    async with Mic(a) as mic_a, Mic(b) as mic_b:
        await confirmed_in_flight(mic_a, slow)
        await mic_b.say()
        await mic_b.play_until(lambda: len(b.turns) == 1)
    assert b.turns[0].reply == "First one is here."
    assert "short" in b.turns[0].degraded


async def test_one_moment_is_said_first_when_the_wait_is_predicted_too_long(
    workers: Workers,
) -> None:
    board = LoadBoard(DegradeOptions(reply_s=2.0))  # any confirmed reply predicted >= 2 s
    slow = FakeResponder(SLOW, delay_s=0.02)
    a, _ = open_conv(workers, board, "tell me a long story", slow)
    voice = FakeSynthesizer()
    b, _ = open_conv(workers, board, "tell me about foxes", FakeResponder(TWO_SENTENCES), voice)
    async with Mic(a) as mic_a, Mic(b) as mic_b:
        await confirmed_in_flight(mic_a, slow)
        await mic_b.say()
        await mic_b.play_until(lambda: len(b.turns) == 1)
    assert voice.texts[0] == "One moment."
    assert voice.texts.count("One moment.") == 1
    turn = b.turns[0]
    assert "one-moment" in turn.degraded
    assert "One moment" not in turn.reply and "One moment" not in turn.heard


class Priorities(FakeTranscriber):
    """Records the worker priority each transcription ran at."""

    def __init__(self, *texts: str) -> None:
        super().__init__(*texts)
        self.priorities: list[Priority] = []

    def transcribe(self, pcm: Pcm, context: str = "", *, vocabulary: str | None = None) -> str:
        self.priorities.append(current_priority())
        return super().transcribe(pcm, context, vocabulary=vocabulary)


class SpokenPriorities(FakeSynthesizer):
    def __init__(self) -> None:
        super().__init__()
        self.priorities: list[Priority] = []

    def synthesize(self, text: str) -> Iterator[Pcm]:
        self.priorities.append(current_priority())
        yield from super().synthesize(text)


async def test_a_text_only_reply_is_short_but_says_and_is_tagged_no_one_moment(
    workers: Workers,
) -> None:
    board = LoadBoard(DegradeOptions(reply_s=2.0))
    slow = FakeResponder(SLOW, delay_s=0.02)
    a, _ = open_conv(workers, board, "tell me a long story", slow)
    voice = FakeSynthesizer()
    b, _ = open_conv(workers, board, "tell me about foxes", FakeResponder(TWO_SENTENCES), voice,
                     spoken=False)
    async with Mic(a) as mic_a, Mic(b) as mic_b:
        await confirmed_in_flight(mic_a, slow)
        await mic_b.say()
        await until(lambda: len(b.turns) == 1, what="B's text-only turn")
    assert voice.texts == [] and b.turns[0].reply == "First one is here."
    assert b.turns[0].degraded == ("no-speculation", "short")


@pytest.mark.parametrize("enabled", [True, False])
async def test_a_skill_turn_gives_up_nothing_and_is_never_queued_behind_llm_work(
    workers: Workers, enabled: bool,
) -> None:
    """Under load its speculative ASR and its speech go at a confirmed turn's priority
    (one LLM step's wait at most, not the other reply's decoding); no "One moment."."""
    board = LoadBoard(DegradeOptions(reply_s=2.0, enabled=enabled))
    slow = FakeResponder(SLOW, delay_s=0.02)
    a, _ = open_conv(workers, board, "tell me a long story", slow)
    ear, voice = Priorities("Set a timer for ten minutes."), SpokenPriorities()
    b_llm = FakeResponder(["Never asked."])
    b, _ = open_conv(workers, board, ear, b_llm, voice, skills=True)
    async with Mic(a) as mic_a, Mic(b) as mic_b:
        await confirmed_in_flight(mic_a, slow)
        await mic_b.send(True, 10)
        await mic_b.send(False, ONSET_FRAMES)
        await until(lambda: bool(voice.priorities), what="the skill's reply synthesized")
        await mic_b.send(False, 20)
        await mic_b.play_until(lambda: len(b.turns) == 1)
    assert b.turns[0].skill == "timer" and b.turns[0].degraded == ()
    assert "One moment." not in voice.texts and not b_llm.started.is_set()
    lifted = Priority.CONFIRMED if enabled else Priority.SPECULATIVE
    assert ear.priorities == [lifted] and voice.priorities[0] == lifted


def test_metrics_count_degraded_turns_by_kind() -> None:
    stats = EngineStats()
    stats.degraded = {"short": 3, "no-speculation": 1}
    found = {(s.name, tuple(s.labels.items())): s.value
             for family in text_string_to_metric_families(
                 Metrics(stats.snapshot, lambda: 0).render().decode())
             for s in family.samples}
    assert found[("apace_degraded_turns_total", (("kind", "short"),))] == 3
    assert found[("apace_degraded_turns_total", (("kind", "no-speculation"),))] == 1
    assert found[("apace_degraded_turns_total", (("kind", "one-moment"),))] == 0


async def test_the_engines_conversations_share_its_board_and_its_counter_reaches_metrics(
    workers: Workers,
) -> None:
    """Two sessions of one engine (scripted models): the second's speculation waits for
    the first's confirmed reply, its turn is tagged, and /metrics counts it."""
    slow, quick = FakeResponder(SLOW, delay_s=0.02), FakeResponder(["Sure thing."])
    responders = iter([slow, quick])
    options = ConversationOptions(vad=TEST_VAD, endpoint=None, partial_interval_s=None,
                                  hold_ms=None)
    engine = Engine(FakeTranscriber("tell me a story"), FakeSynthesizer(),
                    lambda: ClosableResponder(next(responders), lambda: None), options,
                    tts_cache=False, reply_cache=False)
    needs = TransportNeeds(classify=any_sound)
    try:
        async with (engine.open(Speaker(), needs=needs) as a,
                    engine.open(Speaker(), needs=needs) as b):
            async with Mic(a) as mic_a, Mic(b) as mic_b:
                await confirmed_in_flight(mic_a, slow)
                await mic_b.send(True, 10)
                await mic_b.send(False, ONSET_FRAMES)
                await asyncio.sleep(0.1)
                assert b.speculating() is not None and not quick.started.is_set()
                await mic_b.send(False, 20)
                await mic_b.play_until(lambda: len(b.turns) == 1)
    finally:
        engine.close()
    assert "no-speculation" in b.turns[0].degraded
    text = Metrics(engine.stats.snapshot, lambda: 2).render().decode()
    assert 'apace_degraded_turns_total{kind="no-speculation"} 1.0' in text


# --- the light tier ---


def test_a_confirmed_reply_is_the_light_tiers_under_load_when_there_is_one() -> None:
    assert LIGHT in decide(Load(1), DegradeOptions(), speculative=False, light=True).tags
    assert LIGHT not in decide(Load(1), DegradeOptions(), speculative=False).tags
    assert LIGHT not in decide(Load(0), DegradeOptions(), speculative=False, light=True).tags
    assert LIGHT not in decide(Load(1), DegradeOptions(light_from=2), speculative=False,
                               light=True).tags
    assert decide(Load(3), DegradeOptions(), speculative=True, light=True).tags == {NO_SPEC}
    # It waits for none of the others: no "One moment." for it.
    slow = Load(3, oldest_wait_s=5.0)
    assert MOMENT in decide(slow, DegradeOptions(), speculative=False).tags
    assert MOMENT not in decide(slow, DegradeOptions(), speculative=False, light=True).tags
    with pytest.raises(ValueError, match="light_from"):
        DegradeOptions(light_from=0)


async def test_under_load_the_light_tier_writes_the_reply_and_the_shared_llm_is_left_alone(
    workers: Workers,
) -> None:
    board = LoadBoard()
    board.light = True
    slow = FakeResponder(SLOW, delay_s=0.02)
    a, _ = open_conv(workers, board, "tell me a long story", slow)
    b_main, b_light = FakeResponder(["From the big one."]), FakeResponder(["From the light one."])
    b, _ = open_conv(workers, board, "what is a fox", b_main, light=b_light)
    async with Mic(a) as mic_a, Mic(b) as mic_b:
        await confirmed_in_flight(mic_a, slow)
        await mic_b.say()
        await mic_b.play_until(lambda: len(b.turns) == 1)
    turn = b.turns[0]
    assert turn.reply == "From the light one."
    assert b_light.users == ["what is a fox"] and b_main.users == []
    assert "light-tier" in turn.degraded and "one-moment" not in turn.degraded
    assert b.stats.degraded["light-tier"] == 1


async def test_alone_the_shared_llm_writes_the_reply_and_the_light_tier_reads_nothing(
    workers: Workers,
) -> None:
    """Alone, a conversation never asks the light tier, so no CPU is spent on it."""
    board = LoadBoard()
    board.light = True
    main, light = FakeResponder(["From the big one."]), FakeResponder(["From the light one."])
    conv, _ = open_conv(workers, board, "what is a fox", main, light=light)
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 1)
        await until(lambda: bool(main.prefills), what="the shared LLM's prefill")
        await asyncio.sleep(0.2)  # the light tier's read would come next, on its worker
    assert conv.turns[0].reply == "From the big one."
    assert light.users == [] and light.prefills == [] and conv.turns[0].degraded == ()


async def test_after_a_turn_the_light_tier_reads_the_history_while_others_are_open(
    workers: Workers,
) -> None:
    """So that under load it has only the question to read, not the whole conversation."""
    board = LoadBoard()
    board.light = True
    open_conv(workers, board, "hello", FakeResponder(["Hi."]))  # another conversation, open
    light = FakeResponder(["From the light one."])
    conv, _ = open_conv(workers, board, "what is a fox", FakeResponder(["From the big one."]),
                        light=light)
    async with Mic(conv) as mic:
        await mic.say()
        await mic.play_until(lambda: len(conv.turns) == 1)
        await until(lambda: bool(light.prefills), what="the light tier's prefill")
    history, thread = light.prefills[-1]
    assert [m.content for m in history] == ["what is a fox", "From the big one."]
    assert thread == "apace-llm-light"  # its own worker's thread
