"""OfflineSkill: live-data and connected-device requests get one honest sentence."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from pipeline.skills.base import SkillContext, normalise
from pipeline.skills.offline import OfflineSkill

CTX = SkillContext(now=datetime(2026, 12, 1, 15, 45, tzinfo=UTC), monotonic=0.0)
SKILL = OfflineSkill()


def ask(transcript: str) -> str | None:
    reply = SKILL.answer(normalise(transcript), CTX)
    if reply is not None:
        assert reply.skill == "offline" and reply.refusal and reply.action is None
    return None if reply is None else reply.text


WEATHER = "I can't check the weather: I work offline, with no internet."
NEWS = "I can't get the news: I work offline, with no internet."
CALENDAR = "I can't see your calendar: I work offline, on this box only."
MUSIC = "I can't play music: I work offline, with no music service."
SPORTS = "I can't check sports scores: I work offline, with no internet."
PRICES = "I can't check live prices: I work offline, with no internet."
TRAFFIC = "I can't check traffic or directions: I work offline, with no internet."
HOURS = "I can't look up opening hours: I work offline, with no internet."
MESSAGES = "I can't send messages or make calls: I work offline, on this box only."
DEVICES = "I can't control devices in your home: I'm not connected to them."
SEARCH = "I can't search the web: I work offline, with no internet."
ORDERS = "I can't order or book anything: I work offline, with no internet."


@pytest.mark.parametrize(("transcript", "spoken"), [
    ("What's the weather like today?", WEATHER),
    ("what's the forecast for tomorrow", WEATHER),
    ("Will it rain tomorrow?", WEATHER),
    ("what's the temperature outside", WEATHER),
    ("what is the weather in Paris", WEATHER.replace("weather:", "weather in Paris:")),
    ("do I need an umbrella", WEATHER),
    ("is it raining", WEATHER),
    ("What's the news?", NEWS),
    ("read me the headlines", NEWS),
    ("any news about the election", NEWS),
    ("what's on my calendar today", CALENDAR),
    ("do I have any meetings tomorrow", CALENDAR),
    ("when is my next appointment", CALENDAR),
    ("schedule a meeting with Sam at 3", CALENDAR),
    ("Play some music by the Beatles.", MUSIC),
    ("play yesterday by the beatles", MUSIC),
    ("what's the score of the Lakers game", SPORTS),
    ("who won the game last night", SPORTS),
    ("did the yankees win last night", SPORTS),
    ("what's the Apple stock price", PRICES),
    ("how is the stock market doing today", PRICES),
    ("convert fifty dollars to euros", PRICES),
    ("what's the price of bitcoin", PRICES),
    ("how's the traffic on the way to work", TRAFFIC),
    ("directions to the airport", TRAFFIC),
    ("What time does the pharmacy close tonight?", HOURS),
    ("is the supermarket open on sunday", HOURS),
    ("when does the library open", HOURS),
    ("send a message to mom", MESSAGES),
    ("Send the message to all of you.", MESSAGES),  # the 0.5B said "OK, sending the message"
    ("send my texts to Sam", MESSAGES),
    ("call John", MESSAGES),
    ("text my wife that I'm running late", MESSAGES),
    ("read my emails", MESSAGES),
    ("Turn off the lights in the kitchen.", DEVICES),
    ("turn the heating up", DEVICES),
    ("set the thermostat to 70", DEVICES),
    ("dim the lights", DEVICES),
    ("lock the front door", DEVICES),
])
def test_online_only_requests_get_one_honest_sentence(transcript: str, spoken: str) -> None:
    assert ask(transcript) == spoken


@pytest.mark.parametrize(("transcript", "spoken"), [
    # The 0.5B answered "should I take an umbrella" with an invented "No, you don't need one".
    ("Should I take an umbrella today?", WEATHER),
    ("Should I bring a jacket?", WEATHER),
    ("What's the temperature going to be tomorrow?", WEATHER),
    ("How's the weather?", WEATHER),
    ("What will the weather be like tomorrow?", WEATHER),
    ("Is it going to be cold tonight?", WEATHER),
    ("Will it be windy in Chicago tomorrow?", WEATHER),
    ("What's happening in the news?", NEWS),
    ("Any news today?", NEWS),
    ("Who's winning the election?", NEWS),
    ("What's on Netflix tonight?", NEWS),
    ("Who won the Super Bowl last night?", SPORTS),
    ("How did the Lakers do last night?", SPORTS),
    ("What's Ethereum at today?", PRICES),
    ("How much is Bitcoin worth right now?", PRICES),
    ("What's the price of Tesla stock?", PRICES),
    ("Search the web for cheap flights.", SEARCH),
    ("Google the best pizza place near me.", SEARCH),
    ("Look up the population of Chicago online.", SEARCH),
    ("Can you search the internet for me?", SEARCH),
    ("Search online for the new iPhone.", SEARCH),
    ("Find me a plumber nearby.", SEARCH),
    ("Check my email.", MESSAGES),
    ("Read my new e-mails.", MESSAGES),
    ("Send an email to my boss.", MESSAGES),
    ("Call my mom.", MESSAGES),
    ("Turn up the heat.", DEVICES),
    ("Turn off the TV.", DEVICES),
    ("Unlock the back door.", DEVICES),
    ("Switch on the living room lamp.", DEVICES),
    ("Turn the TV to channel 5.", DEVICES),
    ("Order a pizza.", ORDERS),
    ("Order me a taxi.", ORDERS),
    ("Book a table for two at eight.", ORDERS),
    ("Book a flight to London.", ORDERS),
    ("Buy more milk online.", ORDERS),
    ("Buy me a new phone charger.", ORDERS),
    ("Get me an Uber.", ORDERS),
    ("Book a hotel in Paris.", ORDERS),
    ("Order some flowers for my wife.", ORDERS),
    ("Reserve a table at the Italian place.", ORDERS),
    ("Buy tickets for the concert", ORDERS),
])
def test_searches_orders_and_more_live_requests_are_declined(transcript: str, spoken: str) -> None:
    assert ask(transcript) == spoken


@pytest.mark.parametrize("transcript", [
    "Tell me a joke.", "Tell me another joke.", "Tell me a story about a dragon.",
    "Can you tell me a bedtime story?", "What's the best way to learn guitar?",
    "Give me some advice on sleeping better.", "What do you think about cats?",
    "What's your favourite colour?", "What does ubiquitous mean?", "Define photosynthesis.",
    "What is the capital of France?", "How many legs does a spider have?",
    "Which ocean is the largest?", "What is a black hole?", "What is machine learning?",
    "How do I make pancakes?", "Give me a recipe for banana bread.", "What is 12 times 7?",
    "What's 15 percent of 80?", "Who painted the Mona Lisa?", "How far is the moon from the earth?",
    "What is the speed of light?", "What is the weather like on Mars?", "What is a weather balloon?",
    "How do weather forecasts work?", "What does a thermostat do?", "How do I book a flight cheaply?",
    "Who invented the telephone?", "What is the stock market?", "What's a good name for a dog?",
    "How do you say hello in Spanish?", "How many continents are there?", "Is a tomato a fruit?",
    "Write me a poem about the sea.", "What should I cook for dinner?",
    "Which is bigger, a whale or an elephant?", "What is the tallest mountain in the world?",
    "How do I search for a file on Linux?", "What does a news anchor do?",
    "Can you explain how email works?", "How do I call a function in Python?",
    "Explain what a lock screen is.", "Book recommendations for my holiday",
    "Buy or rent, which is better?", "Search engine optimization tips",
    "What's a good book to read on a trip?", "Order of the planets from the sun",
    "How do I order food in French?", "Order the numbers from smallest to largest",
])
def test_jokes_stories_advice_knowledge_recipes_and_maths_are_never_declined(transcript: str) -> None:
    assert ask(transcript) is None


@pytest.mark.parametrize(("transcript", "spoken"), [
    # tiny.en's "weather like" as "weather light": the 0.5B answered "Berlin weather light is clear."
    ("Tell me, Berlin weather light.", WEATHER.replace("weather:", "weather in Berlin:")),
    ("What's the Berlin weather?", WEATHER.replace("weather:", "weather in Berlin:")),
    ("What's the weather like in New York today?", WEATHER.replace("weather:", "weather in New York:")),
    ("Weather for London, please.", WEATHER.replace("weather:", "weather in London:")),
    ("Give me the weather, mate.", WEATHER),
    ("Tomorrow's weather?", WEATHER),
    ("I want to know about weather conditions.", WEATHER),
])
def test_any_request_naming_the_weather_is_declined_with_the_place_it_names(
        transcript: str, spoken: str) -> None:
    assert ask(transcript) == spoken


def test_a_decline_said_just_before_is_told_as_still_so() -> None:
    after = SkillContext(now=CTX.now, monotonic=0.0, previous=WEATHER)
    reply = SKILL.answer(normalise("What's the weather like?"), after)
    assert reply is not None
    assert reply.text == "I still can't check the weather: I work offline, with no internet."
    other = SKILL.answer(normalise("What's the news?"), after)
    assert other is not None and other.text == NEWS


def test_a_decline_given_earlier_in_the_conversation_for_any_place_is_told_as_still_so() -> None:
    later = SkillContext(now=CTX.now, monotonic=0.0, previous="It's 9:30 AM.",
                         earlier=(WEATHER.replace("weather:", "weather in Berlin:"), "It's 9:30 AM."))
    reply = SKILL.answer(normalise("What's the weather?"), later)
    assert reply is not None
    assert reply.text == "I still can't check the weather: I work offline, with no internet."
    paris = SKILL.answer(normalise("What's the weather in Paris?"), later)
    assert paris is not None
    assert paris.text == "I still can't check the weather in Paris: I work offline, with no internet."


def test_every_refusal_is_one_short_sentence_without_symbols() -> None:
    for spoken in (WEATHER, NEWS, CALENDAR, MUSIC, SPORTS, PRICES, TRAFFIC, HOURS, MESSAGES, DEVICES,
                   SEARCH, ORDERS):
        assert spoken.count(".") == 1 and spoken.endswith(".")
        assert len(spoken.split()) <= 14
        assert not set(spoken) & set("%°/*#")


@pytest.mark.parametrize("transcript", [
    "what is weather", "why is the sky blue", "who wrote the news of the world",
    "what does under the weather mean", "I'm feeling under the weather", "what is a stock",
    "how does the stock market work", "who won the world cup in 1966", "call me Al",
    "how do I turn off the lights", "play a game with me", "let's play twenty questions",
    "what's room temperature in celsius", "how many pounds in a kilogram",
    "how long does it take to boil an egg", "is the door open", "what is the meaning of life",
    "tell me a joke", "what time is it", "turn off the timer", "what is news",
    "who invented the traffic light", "explain how calendars work",
    "how do weather balloons work", "we will weather the storm", "who founded the weather channel",
    "I'm a bit under the weather today",
])
def test_questions_about_those_topics_are_left_to_the_llm(transcript: str) -> None:
    assert ask(transcript) is None


def test_two_hundred_answers_take_under_a_second_after_the_first() -> None:
    phrasings = ["what's the weather like today", "why is the sky blue",
                 "turn off the lights in the kitchen", "tell me a joke",
                 "what time does the pharmacy close tonight"]
    ask(phrasings[0])
    started = time.perf_counter()
    for i in range(200):
        ask(phrasings[i % len(phrasings)])
    assert time.perf_counter() - started < 1.0
