"""WorldClockSkill: the time, the time difference and the time zone of a named place, from
the packaged place data and the zones' own rules; a request naming no known place is left
to the other skills and the LLM."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from models.place_data import load_places, world_clock_phrasings, world_clock_skill
from pipeline.skills.base import SkillContext, normalise
from pipeline.skills.world_clock import Place, WorldClockSkill, place_key, say_span

LONDON_WINTER = datetime(2024, 12, 5, 10, 30, tzinfo=ZoneInfo("Europe/London"))


def ask(question: str, now: datetime = LONDON_WINTER, previous: str = "") -> str | None:
    ctx = SkillContext(now=now, monotonic=0.0, previous=previous, transcript=question)
    reply = world_clock_skill().answer(normalise(question), ctx)
    if reply is not None:
        assert reply.skill == "world clock"
        assert reply.source is not None and "GeoNames" in reply.source
    return None if reply is None else reply.text


@pytest.mark.parametrize(("question", "reply"), [
    ("What time is it in Tokyo?", "In Tokyo, it's 7:30 PM."),
    ("what's the current time in paris", "In Paris, it's 11:30 AM."),
    ("What's the time in New Delhi right now?", "In New Delhi, it's 4 PM."),
    ("Can you tell me the time in Reykjavik?", "In Reykjavík, it's 10:30 AM."),
    ("What time is it in Los Angeles?", "In Los Angeles, it's 2:30 AM."),
    ("What time is it in Honolulu?", "In Honolulu, it's 12:30 AM."),
    ("What time is it in California?", "In California, it's 2:30 AM."),
    ("What time is it in Japan?", "In Japan, it's 7:30 PM."),
    ("What time is it in Auckland?", "In Auckland, it's 11:30 PM."),
])
def test_the_time_in_a_place(question: str, reply: str) -> None:
    assert ask(question) == reply


def test_another_day_there_is_named() -> None:
    late = LONDON_WINTER.replace(hour=20)
    assert ask("What time is it in Sydney?", late) == "In Sydney, it's 7:30 AM on Friday."
    assert ask("What time is it in New York?", LONDON_WINTER.replace(hour=2)) == \
        "In New York, it's 9:30 PM on Wednesday."


@pytest.mark.parametrize(("question", "reply"), [
    ("What's the time difference to Tokyo?", "Tokyo is 9 hours ahead of you."),
    ("How many hours ahead is Sydney?", "Sydney is 11 hours ahead of you."),
    ("Is Los Angeles ahead or behind?", "Los Angeles is 8 hours behind you."),
    ("What is the time difference between here and India?",
     "India is 5 and a half hours ahead of you."),
    ("What's the time difference with Kathmandu?",
     "Kathmandu is 5 hours and 45 minutes ahead of you."),
    ("What's the time difference to Dublin?", "Dublin keeps the same time as you."),
])
def test_the_time_difference(question: str, reply: str) -> None:
    assert ask(question) == reply


def test_the_difference_follows_daylight_saving_on_both_sides() -> None:
    """In the weeks when the US has changed its clocks and Europe has not, New York is 4
    hours behind London, not 5."""
    march = datetime(2024, 3, 20, 12, 0, tzinfo=ZoneInfo("Europe/London"))
    assert ask("What's the time difference to New York?", march) == \
        "New York is 4 hours behind you."
    assert ask("What's the time difference to New York?") == "New York is 5 hours behind you."
    utc = datetime(2024, 12, 5, 10, 30, tzinfo=UTC)
    assert ask("How far ahead is Tokyo?", utc) == "Tokyo is 9 hours ahead of you."


def test_the_time_zone_by_its_name() -> None:
    assert ask("What time zone is Chicago in?") == "Chicago is on Central Time."
    assert ask("What is the time zone of Tokyo?") == "Tokyo is on Japan Time."


def test_a_country_of_several_zones_says_so_and_whose_time_it_gives() -> None:
    assert ask("What time is it in the US?") == \
        "The United States has several time zones; in Washington, it's 5:30 AM."
    assert ask("What time is it in Russia?") == \
        "Russia has several time zones; in Moscow, it's 1:30 PM."
    assert ask("What time is it in Spain?") == "In Spain, it's 11:30 AM."  # the Canaries: 1 h


@pytest.mark.parametrize("question", [
    "What time is it in the kitchen?", "What time is it in ten minutes?", "What time is it?",
    "What's the time difference?", "Set a timer for ten minutes.", "What is the capital of Japan?",
    "And in Paris?",  # nothing before it to follow
])
def test_no_known_place_is_not_matched(question: str) -> None:
    assert ask(question) is None


def test_a_follow_up_asks_the_last_question_again_of_another_place() -> None:
    said = ask("What time is it in Tokyo?")
    assert ask("And in Paris?", previous=str(said)) == "In Paris, it's 11:30 AM."
    said = ask("What's the time difference to Tokyo?")
    assert ask("What about New York?", previous=str(said)) == "New York is 5 hours behind you."
    assert ask("And in Chicago?", previous="Tokyo is on Japan Time.") == \
        "Chicago is on Central Time."
    assert ask("And in Paris?", previous="The capital of France is Paris.") is None


def test_names_are_found_as_whisper_writes_them() -> None:
    places = load_places()
    for said, name in (("sao paulo", "São Paulo"), ("new york", "New York"),
                       ("the netherlands", "the Netherlands"), ("st. louis", "St. Louis"),
                       ("Mexico City", "Mexico City")):
        assert places[place_key(said)].name == name, said


def test_the_skill_reads_the_places_it_is_given() -> None:
    """The pure skill: any zone, any name."""
    places = {"atlantis": Place(name="Atlantis", zone=timezone(timedelta(hours=-3)),
                                zone_name="Atlantis Time")}
    skill = WorldClockSkill(places, phrasings=world_clock_phrasings(), source="test")
    ctx = SkillContext(now=datetime(2024, 1, 1, 12, 0, tzinfo=UTC), monotonic=0.0)
    reply = skill.answer("what time is it in atlantis", ctx)
    assert reply is not None and reply.text == "In Atlantis, it's 9 AM." and reply.source == "test"
    assert skill.answer("what time is it in tokyo", ctx) is None


@pytest.mark.parametrize(("minutes", "said"), [
    (60, "1 hour"), (540, "9 hours"), (330, "5 and a half hours"), (345, "5 hours and 45 minutes"),
    (30, "30 minutes"), (-480, "8 hours"),
])
def test_spans_as_said(minutes: int, said: str) -> None:
    assert say_span(timedelta(minutes=minutes)) == said


def test_the_server_skills_answer_it_before_the_llm(tmp_path: object) -> None:
    """In the server's order (Home Assistant's intents first): the local time stays the
    clock's, another place's is the world clock's."""
    from app.runtime import stateless_skills
    from models.intents import load_recognizer
    from pipeline.skills import Timers, default_skills

    extra, store = stateless_skills(str(tmp_path))
    skills = default_skills(timers=Timers(), store=store, extra=extra, recognizer=load_recognizer())
    ctx = SkillContext(now=LONDON_WINTER, monotonic=0.0)
    there = skills.answer("What time is it in Tokyo?", ctx)
    here = skills.answer("What time is it?", ctx)
    assert there is not None and (there.skill, there.text) == ("world clock", "In Tokyo, it's 7:30 PM.")
    assert here is not None and (here.skill, here.text) == ("clock", "It's 10:30 AM.")
    store.close()
