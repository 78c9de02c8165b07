"""Requests recognised by hassil over Home Assistant's English sentences (and apace's own)
are really carried out: each test checks the timer store, not just the words."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hassil import Intents
from hassil.sample import sample_intents

from models.intents import HA_INTENTS, ha_sentences, load_recognizer
from pipeline.skills import SkillContext, SkillReply, Skills, Timers, default_skills, normalise
from pipeline.skills.clock import ClockSkill
from pipeline.skills.hush import HushSkill
from pipeline.skills.offline import OfflineSkill

LONDON = ZoneInfo("Europe/London")
NOW = datetime(2024, 5, 1, 8, 0, tzinfo=LONDON)


def ctx(later_s: float = 0.0) -> SkillContext:
    return SkillContext(now=NOW + timedelta(seconds=later_s), monotonic=1000.0 + later_s)


def skills(timers: Timers) -> Skills:
    return default_skills(timers=timers, store=None, recognizer=load_recognizer(),
                          extra=[HushSkill(), ClockSkill(), OfflineSkill()])


def say(router: Skills, transcript: str, later_s: float = 0.0) -> SkillReply:
    """Ask, and commit the turn (run the reply's action), `later_s` after the start."""
    reply = router.answer(transcript, replace(ctx(later_s), transcript=transcript))
    assert reply is not None, transcript
    if reply.action is not None:
        reply.action()
    return reply


def running(*names_and_seconds: tuple[str | None, float]) -> tuple[Timers, Skills]:
    timers = Timers()
    router = skills(timers)
    for name, seconds in names_and_seconds:
        what = f"set a {name} timer for {seconds:g} seconds" if name else \
            f"set a timer for {seconds:g} seconds"
        say(router, what)
    return timers, router


def left(timers: Timers, later_s: float = 0.0) -> dict[str | None, float]:
    return {t.name or t.label: round(Timers.remaining(t, 1000.0 + later_s)) for t in timers.active()}


def test_every_sampled_home_assistant_sentence_is_recognised_as_its_intent() -> None:
    """hassil's own samples of HA's templates (ranges expanded, no wildcards) round-trip."""
    logging.getLogger("hassil").setLevel(logging.ERROR)
    samples = list(sample_intents(Intents.from_dict(ha_sentences()), max_sentences_per_intent=80,
                                  language="en"))
    assert {intent for intent, _ in samples} >= set(HA_INTENTS) - {"HassShoppingListAddItem",
                                                                   "HassShoppingListCompleteItem"}
    wrong = [(intent, text) for intent, text in samples
             if [f.intent for f in load_recognizer().recognise(normalise(text))][:1] != [intent]]
    assert wrong == []


@pytest.mark.parametrize(
    ("transcript", "seconds", "said"),
    [
        # Home Assistant's own test sentences (tests/en/homeassistant_HassStartTimer.yaml).
        ("set a timer for 5 minutes", 300, "5 minute"),
        ("5 minute timer", 300, "5 minute"),
        ("timer for 1 hour and 30 minutes", 5400, "an hour and a half"),
        ("set a timer for 2 hours and 1 second", 7201, "2 hours and 1 second"),
        ("start a timer for 1 and a half hours", 5400, "an hour and a half"),
        # The forms Whisper writes.
        ("A ten minute timer.", 600, "10 minute"),
        ("Set a 10-minute timer.", 600, "10 minute"),
        ("Set a timer for one and a half hours.", 5400, "an hour and a half"),
        ("Set a timer for an hour and a half.", 5400, "an hour and a half"),
        ("Set a timer for 1/2 an hour.", 1800, "30 minute"),
        ("Set a timer for half an hour.", 1800, "30 minute"),
        ("Set a timer for 90 seconds.", 90, "a minute and a half"),
        ("Set a timer for 1 hour, 5 minutes and 30 seconds.", 3930,
         "1 hour, 5 minutes and 30 seconds"),
    ],
)
def test_start_timer_sets_the_length_said(transcript: str, seconds: float, said: str) -> None:
    timers = Timers()
    reply = say(skills(timers), transcript)
    [timer] = timers.active()
    assert timer.duration_s == seconds and timer.due == pytest.approx(1000.0 + seconds)
    assert said in reply.text


def test_a_named_timer_keeps_its_name() -> None:
    timers, _ = running(("pizza", 600))
    assert [t.name for t in timers.active()] == ["pizza"]


@pytest.mark.parametrize("transcript", ["pause the pizza timer", "Pause my pizza timer.",
                                        "pause timer for pizza"])
def test_pause_stops_the_named_timers_clock(transcript: str) -> None:
    timers, router = running(("pizza", 600), (None, 300))
    reply = say(router, transcript, later_s=60)
    assert reply.text == "Pizza timer paused, with 9 minutes left."
    assert left(timers, later_s=500) == {"pizza": 540, "5 minute timer": 0}
    assert timers.next_due() == pytest.approx(1300.0)  # only the running one can ring


def test_resume_restarts_from_the_time_left() -> None:
    timers, router = running(("pizza", 600))
    say(router, "pause the pizza timer", later_s=60)
    reply = say(router, "Resume the pizza timer.", later_s=1000)
    assert reply.text == "Pizza timer resumed: 9 minutes left."
    [timer] = timers.active()
    assert not timer.paused and timer.due == pytest.approx(2000.0 + 540)


@pytest.mark.parametrize("transcript", ["pause timer", "pause my timer", "Pause it."])
def test_pause_with_one_timer_pauses_that_one(transcript: str) -> None:
    timers, router = running((None, 600))
    say(router, transcript)
    assert [t.paused for t in timers.active()] == [True]


def test_continue_resumes_the_only_paused_one_of_two() -> None:
    timers, router = running(("pizza", 600), ("eggs", 300))
    say(router, "pause the eggs timer")
    say(router, "continue the timer", later_s=30)
    assert [t.paused for t in timers.active()] == [False, False]


def test_pause_with_two_running_asks_which_and_changes_nothing() -> None:
    timers, router = running(("pizza", 600), ("eggs", 300))
    reply = say(router, "pause the timer")
    assert reply.text == "Which one should I pause: the eggs timer or the pizza timer?"
    assert not any(t.paused for t in timers.active())


def test_which_one_keeps_the_and_inside_a_timers_name() -> None:
    _, router = running((None, 3400), (None, 600))
    assert say(router, "pause the timer").text == (
        "Which one should I pause: the 10 minute timer or the timer for 56 minutes and 40 seconds?")


def test_which_one_of_many_names_three_in_one_question() -> None:
    timers, router = running(*((name, 600 + 60 * i) for i, name in
                               enumerate(["eggs", "pizza", "rice", "tea", "bread"])))
    reply = say(router, "pause the timer")
    assert reply.text == ("Which of your 5 timers should I pause: the eggs timer, the pizza "
                          "timer, the rice timer or another?")
    stop = say(router, "cancel the timer")
    assert stop.text.count(".") + stop.text.count("?") == 2 and "cancel all timers" in stop.text
    assert len(timers.active()) == 5


def test_time_left_on_many_timers_is_how_many_and_the_next_to_ring() -> None:
    _, router = running(("eggs", 900), ("pizza", 300), ("rice", 1200))
    say(router, "pause the pizza timer")
    assert say(router, "how much time is left on my timers", later_s=60).text == (
        "You have 3 timers running. Next: about 14 minutes left on the eggs timer.")


@pytest.mark.parametrize("transcript", ["Continue for 2 hour timer", "resume the 2 hour timer"])
def test_a_length_heard_with_a_leading_word_still_picks_the_timer(transcript: str) -> None:
    timers, router = running(("pizza", 600), (None, 7200))
    say(router, "pause the 2 hour timer")
    say(router, transcript, later_s=60)
    assert [t.paused for t in timers.active()] == [False, False]


@pytest.mark.parametrize(
    ("transcript", "change"),
    [
        ("add 5 minutes to the timer", 300),
        ("Add 5 minutes to the pizza timer.", 300),
        ("increase the pizza timer by 30 seconds", 30),
        ("add 1/2 an hour to my timer", 1800),
        ("add 1 and a half minutes to the timer", 90),
        ("Add 5 more minutes on the pizza timer.", 300),
        ("put an extra 2 minutes on the timer", 120),
        ("take 5 minutes off the pizza timer", -300),
        ("Remove 2 minutes from my timer.", -120),
        ("decrease the timer by 1 minute", -60),
        ("Subtract 30 seconds from the pizza timer.", -30),
    ],
)
def test_adding_or_taking_time_changes_the_time_left(transcript: str, change: float) -> None:
    timers, router = running(("pizza", 600))
    say(router, transcript)
    [timer] = timers.active()  # the same timer: none started, none cancelled
    assert timer.name == "pizza" and timer.duration_s == 600
    assert timer.due == pytest.approx(1600.0 + change)


def test_adding_time_says_the_new_time_left() -> None:
    _, router = running(("pizza", 600))
    assert say(router, "add 5 minutes to the pizza timer").text == \
        "Added 5 minutes to the pizza timer: 15 minutes left."
    assert say(router, "take 5 minutes off the pizza timer").text == \
        "Took 5 minutes off the pizza timer: 10 minutes left."


def test_adding_time_to_a_paused_timer_keeps_it_paused() -> None:
    timers, router = running(("pizza", 600))
    say(router, "pause the pizza timer")
    say(router, "add 2 minutes to the pizza timer", later_s=100)
    assert left(timers, later_s=900) == {"pizza": 720}


def test_taking_more_than_is_left_makes_it_ring_now() -> None:
    timers, router = running(("pizza", 60))
    say(router, "take 5 minutes off the pizza timer", later_s=10)
    assert [t.name for t in timers.pop_due(1010.0)] == ["pizza"]


def test_add_time_picks_the_timer_by_its_length() -> None:
    timers, router = running((None, 3600), (None, 600))
    say(router, "add 10 minutes to the 1 hour timer")
    assert sorted(t.due for t in timers.active()) == [pytest.approx(1600.0), pytest.approx(5200.0)]


@pytest.mark.parametrize(
    ("transcript", "said"),
    [
        ("How long is left on the 1 hour timer?", "About 1 hour left on the 1 hour timer."),
        ("how much time is left on my pizza timer", "About 10 minutes left on the pizza timer."),
        ("status of the pizza timer", "About 10 minutes left on the pizza timer."),
        ("Status on my pizza timers.", "About 10 minutes left on the pizza timer."),
        ("give me a status on the 1 hour timer", "About 1 hour left on the 1 hour timer."),
        ("How long is left on the pizza timer?", "About 10 minutes left on the pizza timer."),
        ("how much time is remaining on the pizza timer", "About 10 minutes left on the pizza timer."),
    ],
)
def test_status_reports_and_starts_nothing(transcript: str, said: str) -> None:
    timers, router = running(("pizza", 600), (None, 3600))
    assert say(router, transcript).text == said
    assert len(timers.active()) == 2


def test_how_long_is_left_then_the_other_one() -> None:
    _, router = running(("pizza", 600), (None, 3600))
    assert say(router, "How long is left on the pizza timer?").text == \
        "About 10 minutes left on the pizza timer."
    assert say(router, "And the other one?", later_s=60).text == \
        "About 59 minutes left on the 1 hour timer."
    assert say(router, "how long is left?", later_s=60).text.startswith("About 9 minutes")


@pytest.mark.parametrize(("transcript", "gone"), [
    ("cancel the pizza timer", "pizza"), ("stop the 10 minute timer", "10 minute timer"),
    ("Cancel my timer for pizza.", "pizza"),
])
def test_cancel_one_by_name_or_by_length(transcript: str, gone: str) -> None:
    timers, router = running(("pizza", 300), (None, 600))
    say(router, transcript)
    assert gone not in left(timers) and len(timers.active()) == 1


@pytest.mark.parametrize("transcript", ["cancel all timers", "Stop all of my timers."])
def test_cancel_all(transcript: str) -> None:
    timers, router = running(("pizza", 300), (None, 600))
    assert say(router, transcript).text == "Cancelled 2 timers."
    assert timers.active() == []


@pytest.mark.parametrize(
    ("transcript", "wall"),
    [
        # At 8 AM an hour without am/pm is the next one (the evening's), as before; the
        # morning's when it wakes someone up.
        ("Set an alarm for 615.", "18:15"),
        ("set an alarm for 6:15", "18:15"),
        ("Set an alarm for 6.15 am.", "06:15"),
        ("Wake me up at 6.15.", "06:15"),
        ("wake me up at six fifteen", "06:15"),
        ("get me up at 615", "06:15"),
        ("set an alarm for quarter past six", "18:15"),
        ("Set an alarm for quarter to seven.", "18:45"),
        ("set an alarm for half past six", "18:30"),
        ("set an alarm for 715 pm", "19:15"),
        ("set an alarm for 0715", "07:15"),
    ],
)
def test_alarm_clock_times_in_every_form_whisper_writes(transcript: str, wall: str) -> None:
    timers = Timers()
    say(skills(timers), transcript)
    [alarm] = timers.active()
    assert alarm.kind == "alarm" and alarm.wall.strftime("%H:%M") == wall


def test_reminder_from_apace_sentences() -> None:
    timers = Timers()
    reply = say(skills(timers), "Remind me in 10 minutes to call my mom.")
    [reminder] = timers.active()
    assert (reminder.kind, reminder.label, reminder.duration_s) == ("reminder", "call your mom", 600)
    assert reply.text == "OK, in 10 minutes I'll remind you to call your mom."


@pytest.mark.parametrize("transcript", ["Remind me at 615 pm to call my mom.",
                                        "remind me to call my mom at 6.15 pm"])
def test_reminder_at_a_clock_time(transcript: str) -> None:
    timers = Timers()
    reply = say(skills(timers), transcript)
    [reminder] = timers.active()
    assert (reminder.kind, reminder.label, reminder.wall.strftime("%H:%M")) == \
        ("reminder", "call your mom", "18:15")
    assert reply.text == "OK, at 6:15 PM I'll remind you to call your mom."


@pytest.mark.parametrize(
    ("transcript", "skill", "text"),
    [
        ("What time is it?", "clock", "It's 8 AM."),
        ("what is the current time", "clock", "It's 8 AM."),
        ("What's the date today?", "clock", None),
        ("what is todays date", "clock", None),
        ("What's the weather like?", "offline", None),
        ("what is the weather like in Paris", "offline", None),
        ("Never mind.", "hush", ""),
    ],
)
def test_other_intents_reach_the_skill_that_answers_them(transcript: str, skill: str,
                                                         text: str | None) -> None:
    reply = say(skills(Timers()), transcript)
    assert reply.skill == skill
    if text is not None:
        assert reply.text == text
    if skill == "offline":
        assert reply.refusal


def test_shopping_list_add_and_complete(tmp_path: object) -> None:
    from pathlib import Path

    from models.list_store import SqliteListStore

    store = SqliteListStore(Path(str(tmp_path)) / "lists.sqlite3")
    router = default_skills(timers=Timers(), store=store, recognizer=load_recognizer())
    assert say(router, "Add apples, pears and milk to my shopping list.").skill == "list"
    assert store.items("default", "shopping") == ["apples", "pears", "milk"]
    say(router, "check off apples from my shopping list")
    say(router, "Check off milk on my shopping list.")
    assert store.items("default", "shopping") == ["pears"]


@pytest.mark.parametrize("transcript", ["What is a timer?", "Tell me a joke about timers.",
                                        "Who invented the alarm clock?"])
def test_questions_about_timers_are_not_requests(transcript: str) -> None:
    timers = Timers()
    assert skills(timers).answer(transcript, ctx()) is None
    assert timers.active() == []


def test_adding_time_with_no_timer_running_starts_none() -> None:
    timers = Timers()
    assert say(skills(timers), "Add 5 minutes to the timer.").text == "No timers are running."
    assert timers.active() == []


@pytest.mark.parametrize(("heard", "paused"), [
    ("Post timer.", True),  # tiny.en's "pause" in an espeak-ng voice
    ("Post the pizza timer.", True),
    ("Paws my timer", True),
])
def test_a_timer_verb_heard_as_a_soundalike_is_still_the_verb(heard: str, paused: bool) -> None:
    timers, router = running(("pizza", 600))
    say(router, heard)
    assert [t.paused for t in timers.active()] == [paused]


def test_cancel_heard_as_council_cancels() -> None:
    timers, router = running(("pizza", 600))
    assert say(router, "Council my timer.").text == "Pizza timer cancelled."
    assert timers.active() == []


@pytest.mark.parametrize("transcript", [
    "post a timer for 10 minutes",  # "post" could be "pause": a start is not a pause
    "pasta timer for 5 minutes",
])
def test_a_soundalike_is_tried_only_where_no_skill_took_the_words(transcript: str) -> None:
    timers, router = running()
    reply = router.answer(transcript, ctx())
    assert reply is None or "pause" not in reply.text.lower()
    assert not any(t.paused for t in timers.active())


def test_two_timers_alike_are_told_apart_by_their_time_left() -> None:
    timers, router = running((None, 1800))
    say(router, "set a timer for 30 minutes", later_s=600)
    assert say(router, "cancel my 30 minute timer", later_s=660).text == (
        "Which one should I cancel: the 30 minute timer with 19 minutes left or the 30 minute "
        "timer with 29 minutes left? Or say cancel all timers.")
    assert len(timers.active()) == 2


def test_two_timers_alike_in_every_way_the_first_is_taken() -> None:
    timers, router = running((None, 1800), (None, 1800))
    assert say(router, "cancel my 30 minute timer").text == "30 minute timer cancelled."
    assert len(timers.active()) == 1


@pytest.mark.parametrize("transcript", ["add 1 and half hour to the timer",
                                        "add one and the half hour to the timer"])
def test_one_and_half_hour_as_home_assistant_writes_it(transcript: str) -> None:
    timers, router = running(("pizza", 600))
    say(router, transcript)
    assert left(timers) == {"pizza": 600 + 5400}
