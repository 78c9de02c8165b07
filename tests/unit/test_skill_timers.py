"""Timers, alarms and reminders: what is understood, what is said, and when it changes."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from pipeline.skills import SkillContext, SkillReply, Timers, TimerSkill, normalise, ring_text

LONDON = ZoneInfo("Europe/London")
NOW = datetime(2024, 5, 1, 8, 0, tzinfo=LONDON)
CTX = SkillContext(now=NOW, monotonic=1000.0)


def ask(skill: TimerSkill, transcript: str, ctx: SkillContext = CTX) -> SkillReply | None:
    return skill.answer(normalise(transcript), ctx)


def commit(skill: TimerSkill, transcript: str, ctx: SkillContext = CTX) -> SkillReply:
    reply = ask(skill, transcript, ctx)
    assert reply is not None, transcript
    if reply.action is not None:
        reply.action()
    return reply


@pytest.mark.parametrize(
    ("transcript", "text", "seconds", "name"),
    [
        ("Set a timer for 10 minutes.", "OK, a 10 minute timer, starting now.", 600, None),
        ("set a timer for ten minutes", "OK, a 10 minute timer, starting now.", 600, None),
        ("Start an eight minute timer for the pasta.", "Pasta timer set for 8 minutes.", 480, "pasta"),
        ("timer 5 minutes", "OK, a 5 minute timer, starting now.", 300, None),
        ("Set a pasta timer for 12 minutes.", "Pasta timer set for 12 minutes.", 720, "pasta"),
        ("A 15-minute timer, please.", "OK, a 15 minute timer, starting now.", 900, None),
        ("Set an 18 minute timer", "OK, an 18 minute timer, starting now.", 1080, None),
        ("Set a timer for 90 seconds.", "OK, a timer for a minute and a half, starting now.", 90, None),
        ("set a timer for an hour and a half", "OK, a timer for an hour and a half, starting now.",
         5400, None),
        ("Could you set a timer for 1 hour and 30 minutes for the roast?",
         "Roast timer set for an hour and a half.", 5400, "roast"),
        ("Set a timer for ten minutes called eggs.", "Eggs timer set for 10 minutes.", 600, "eggs"),
        ("Set a time for 5 minutes.", "OK, a 5 minute timer, starting now.", 300, None),  # ASR slip
        ("Timer: 3 minutes", "OK, a 3 minute timer, starting now.", 180, None),
    ],
)
def test_set_timer_phrasings_reply_and_start_the_right_timer(
    transcript: str, text: str, seconds: float, name: str | None
) -> None:
    timers = Timers()
    reply = commit(TimerSkill(timers), transcript)
    assert (reply.text, reply.skill) == (text, "timer")
    [timer] = timers.active()
    assert (timer.kind, timer.name, timer.duration_s) == ("timer", name, seconds)
    assert timer.due == pytest.approx(CTX.monotonic + seconds)
    assert timer.wall == NOW + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    "transcript",
    [
        "What's the time difference to Tokyo?",
        "What is a timer?",
        "How does an egg timer work?",
        "Remind me what you said.",
        "Who invented the alarm clock?",
        "Set the table.",
        "How long is a timer?",
        "How much time is left until Christmas?",
        "Is a 10 minute timer enough for soft boiled eggs?",
        "Stop talking.",
        "Tell me a joke.",
    ],
)
def test_near_misses_are_left_to_the_llm(transcript: str) -> None:
    assert ask(TimerSkill(Timers()), transcript) is None


def test_nothing_starts_until_the_action_runs_and_it_runs_once() -> None:
    timers = Timers()
    reply = ask(TimerSkill(timers), "set a timer for ten minutes")
    assert reply is not None and reply.action is not None
    assert timers.active() == []
    reply.action()
    assert len(timers.active()) == 1


def test_set_timer_without_duration_asks_and_changes_nothing() -> None:
    reply = ask(TimerSkill(Timers()), "Set a timer.")
    assert reply is not None and reply.action is None
    assert reply.text.startswith("For how long?")


def test_several_named_timers_run_at_once_and_cancel_by_name_leaves_the_others() -> None:
    timers = Timers()
    skill = TimerSkill(timers)
    commit(skill, "set a pasta timer for 8 minutes")
    commit(skill, "set an egg timer for 6 minutes")
    commit(skill, "set a timer for 20 minutes")
    reply = ask(skill, "Cancel the pasta timer.")
    assert reply is not None and reply.text == "Pasta timer cancelled."
    assert len(timers.active()) == 3
    assert reply.action is not None
    reply.action()
    assert sorted(t.label for t in timers.active()) == ["20 minute timer", "egg timer"]


def test_cancel_my_timer_cancels_the_only_one() -> None:
    timers = Timers()
    skill = TimerSkill(timers)
    commit(skill, "set a timer for 10 minutes")
    assert commit(skill, "cancel my timer").text == "10 minute timer cancelled."
    assert timers.active() == []


def test_stop_the_timer_with_several_running_asks_which_and_changes_nothing() -> None:
    timers = Timers()
    skill = TimerSkill(timers)
    commit(skill, "set a pasta timer for 8 minutes")
    commit(skill, "set a timer for 10 minutes")
    reply = ask(skill, "stop the timer")
    assert reply is not None and reply.action is None
    assert "Which one" in reply.text and "the pasta timer" in reply.text
    assert commit(skill, "cancel all timers").text == "Cancelled 2 timers."
    assert timers.active() == []


def test_cancel_with_nothing_running_says_so() -> None:
    reply = ask(TimerSkill(Timers()), "cancel the timer")
    assert reply is not None and reply.text == "No timers are running." and reply.action is None


def test_remaining_is_rounded_to_ten_seconds_and_named() -> None:
    timers = Timers()
    skill = TimerSkill(timers)
    commit(skill, "start an eight minute timer for the pasta")
    later = SkillContext(now=NOW + timedelta(seconds=282), monotonic=CTX.monotonic + 282)
    reply = ask(skill, "How long is left on the pasta timer?", later)
    assert reply is not None
    assert reply.text == "About 3 minutes and 20 seconds left on the pasta timer."
    assert reply.action is None


def test_remaining_under_a_minute_is_in_seconds() -> None:
    timers = Timers()
    skill = TimerSkill(timers)
    commit(skill, "set a timer for 10 minutes")
    later = SkillContext(now=NOW, monotonic=CTX.monotonic + 600 - 45)
    reply = ask(skill, "how much time is left", later)
    assert reply is not None and reply.text == "45 seconds left on the 10 minute timer."


def test_remaining_over_an_hour_is_hours_and_minutes() -> None:
    timers = Timers()
    skill = TimerSkill(timers)
    commit(skill, "set a timer for 2 hours")
    later = SkillContext(now=NOW, monotonic=CTX.monotonic + 1200 + 17)
    reply = ask(skill, "how much longer on the timer", later)
    assert reply is not None and reply.text == "About 1 hour and 40 minutes left on the 2 hour timer."


def test_what_timers_do_i_have_lists_them_or_says_none() -> None:
    timers = Timers()
    skill = TimerSkill(timers)
    reply = ask(skill, "What timers do I have?")
    assert reply is not None and reply.text == "No timers are running."
    commit(skill, "set a pasta timer for 8 minutes")
    commit(skill, "set a timer for 10 minutes")
    reply = ask(skill, "what timers do I have")
    assert reply is not None
    assert reply.text == (
        "You have 2 timers: the pasta timer with 8 minutes left and the 10 minute timer with "
        "10 minutes left."
    )


def test_alarm_later_today_is_today() -> None:
    timers = Timers()
    reply = commit(TimerSkill(timers), "Set an alarm for 6:30 pm.")
    assert reply.text == "Alarm set for 6:30 PM."
    [alarm] = timers.active()
    assert alarm.kind == "alarm"
    assert alarm.wall == datetime(2024, 5, 1, 18, 30, tzinfo=LONDON)
    assert alarm.due == pytest.approx(CTX.monotonic + 10.5 * 3600)


def test_alarm_for_a_time_already_past_today_is_tomorrow() -> None:
    timers = Timers()
    reply = commit(TimerSkill(timers), "Wake me up at 7 a.m.")
    assert reply.text == "Alarm set for 7 AM tomorrow."
    assert timers.active()[0].wall == datetime(2024, 5, 2, 7, 0, tzinfo=LONDON)


def test_alarm_tomorrow_is_tomorrow_even_when_still_ahead_today() -> None:
    timers = Timers()
    reply = commit(TimerSkill(timers), "set an alarm for 6:30 tomorrow")
    assert reply.text == "Alarm set for 6:30 AM tomorrow."
    assert timers.active()[0].wall == datetime(2024, 5, 2, 6, 30, tzinfo=LONDON)


def test_wake_me_up_without_am_pm_means_the_morning() -> None:
    timers = Timers()
    early = SkillContext(now=datetime(2024, 5, 1, 5, 0, tzinfo=LONDON), monotonic=0.0)
    assert commit(TimerSkill(timers), "wake me up at seven", early).text == "Alarm set for 7 AM."


def test_alarm_without_am_pm_is_the_next_occurrence() -> None:
    timers = Timers()
    reply = commit(TimerSkill(timers), "set an alarm for seven thirty")
    assert reply.text == "Alarm set for 7:30 PM."


def test_alarm_due_counts_real_seconds_across_a_clock_change() -> None:
    timers = Timers()
    evening = SkillContext(now=datetime(2024, 3, 30, 22, 0, tzinfo=LONDON), monotonic=0.0)
    commit(TimerSkill(timers), "wake me up at 7 am", evening)
    assert timers.active()[0].due == pytest.approx(8 * 3600)  # clocks went forward an hour


def test_reminder_in_a_duration_before_the_task() -> None:
    timers = Timers()
    reply = commit(TimerSkill(timers), "In twenty minutes, remind me to call mom.")
    assert reply.text == "OK, in 20 minutes I'll remind you to call mom."
    [reminder] = timers.active()
    assert (reminder.kind, reminder.label, reminder.duration_s) == ("reminder", "call mom", 1200)
    assert ring_text(reminder) == "Reminder: call mom."


def test_reminder_with_the_duration_after_the_task_speaks_from_my_side() -> None:
    timers = Timers()
    reply = commit(TimerSkill(timers), "Remind me to take my bread out in 10 minutes.")
    assert reply.text == "OK, in 10 minutes I'll remind you to take your bread out."
    assert timers.active()[0].label == "take your bread out"


def test_reminder_at_a_time_of_day_tomorrow() -> None:
    timers = Timers()
    reply = commit(TimerSkill(timers), "Remind me tomorrow at 9 to call the dentist.")
    assert reply.text == "OK, at 9 AM tomorrow I'll remind you to call the dentist."
    assert timers.active()[0].wall == datetime(2024, 5, 2, 9, 0, tzinfo=LONDON)


def test_reminder_without_a_time_asks_when() -> None:
    reply = ask(TimerSkill(Timers()), "remind me to call mom")
    assert reply is not None and reply.action is None and reply.text.startswith("When")


def test_ring_text_for_each_kind() -> None:
    timers = Timers()
    skill = TimerSkill(timers)
    for said in ("set a pasta timer for 8 minutes", "set a timer for 10 minutes",
                 "wake me up at 7 am", "in 20 minutes remind me to call mom"):
        commit(skill, said)
    rung = [ring_text(t) for t in timers.pop_due(float("inf"))]
    assert rung == [
        "Your pasta timer is done.",
        "Your 10 minute timer is done.",
        "Reminder: call mom.",
        "It's 7 AM: your alarm.",
    ]


def test_pop_due_returns_due_timers_in_due_order_and_keeps_the_rest() -> None:
    timers = Timers()
    late = timers.add("timer", 30.0, "c", None, NOW)
    first = timers.add("timer", 10.0, "a", None, NOW)
    second = timers.add("reminder", 20.0, "b", None, NOW)
    assert timers.next_due() == 10.0
    assert timers.pop_due(5.0) == []
    assert timers.pop_due(25.0) == [first, second]
    assert timers.active() == [late]
    assert timers.next_due() == 30.0
    assert Timers.remaining(late, 25.0) == 5.0 and Timers.remaining(late, 99.0) == 0.0


def test_store_cancel_by_name_and_kind_and_on_change_is_called() -> None:
    changes: list[int] = []
    timers = Timers(on_change=lambda: changes.append(1))
    timers.add("timer", 10.0, "pasta timer", "pasta", NOW)
    timers.add("alarm", 20.0, "alarm", None, NOW)
    assert [t.name for t in timers.cancel("pasta")] == ["pasta"]
    assert timers.cancel("pasta") == []
    assert [t.kind for t in timers.cancel(None, kind="alarm")] == ["alarm"]
    assert timers.next_due() is None
    assert len(changes) == 4  # two adds, two cancels that removed something
