"""Honest limits: what an offline box cannot know or do gets one true sentence, not a guess.

Asked "what's the weather like", a small LLM invents a forecast. This skill recognises the
requests that need the internet or a connected service — weather, news, calendar, music,
sports scores, prices, traffic, opening hours, messages and calls, smart-home devices, web
searches, ordering and booking — and
says plainly that it cannot. Questions *about* those things ("what is weather", "why is the
sky blue", "who wrote the News of the World") are knowledge, not live data, and go to the
LLM: definitions and explanations are declined first, and commands only match at the
start of the request ("turn off the lights…", not "how do I turn off…").
"""

from __future__ import annotations

import re

from pipeline.skills.base import LastResult, SkillContext, SkillReply
from pipeline.skills.phrasing import core, digits

_OFFLINE = "I work offline, with no internet."
_BOX = "I work offline, on this box only."

_KNOWLEDGE = re.compile(
    r"^(?:why\b|who (?:wrote|invented|discovered|sang|composed|directed|founded|created)\b"
    r"|define\b|(?:the )?definition of\b|explain\b|what (?:is|are|was) (?:a |an )?\w+$"
    r"|what does .+ mean$|how (?:does|do) .+ work$|what causes\b"
    r"|.*\b(?:history|histories|century|centuries|ancient|medieval)\b"
    r"|.*\bunder the weather\b"
    r"|.*\bon (?:mars|venus|jupiter|saturn|mercury|neptune|uranus|pluto|the moon)\b)"
)
"""Definitions, explanations, history: the LLM's to answer even when a topic word matches."""

_CURRENCY = r"(?:dollars?|euros?|pounds?|yen|pesos?|rupees?|francs?|bitcoins?)"
_DEVICE = (r"(?:lights?|lamps?|heating|heat|heater|ac|air conditioning|air conditioner|fan|tv"
           r"|television|thermostat|plugs?|sockets?|oven|kettle|boiler|sprinklers?|alarm system"
           r"|coffee (?:machine|maker)|dishwasher|washing machine|blinds|vacuum|robot vacuum)")
_PLACE = r"(?:the |my )?[\w' ]+?"

_CATEGORIES: tuple[tuple[str, str], ...] = (
    ("I can't check the weather: " + _OFFLINE,
     r"(?<!under )\b(?:the|today's|tomorrow's|tonight's|weekend|this week's) (?:weather|forecast)\b"
     r"|^weather\b|\bweather (?:like|today|tomorrow|tonight|forecast|report|this|for|in|at"
     r"|outside|now|going to)\b|\bforecast (?:for|today|tomorrow|tonight|this)\b"
     r"|\b(?:will|is) it (?:going to |gonna )?(?:rain|snow|be (?:sunny|cloudy|windy|hot|cold|warm"
     r"|nice|dry))\b|\bis it (?:raining|snowing|sunny|cloudy|windy|hot|cold)(?: outside| out)?$"
     r"|\bneed an umbrella\b|\bhow (?:hot|cold|warm|windy|humid) is it\b"
     r"|\btemperature (?:outside|out there|today|tomorrow|tonight|right now|now"
     r"|in (?!celsius|fahrenheit|kelvin)[a-z]+$)|\boutside temperature\b"
     r"|\b(?:humidity|uv index|pollen count|air quality) (?:today|now|outside|like)\b"
     r"|^(?:should|do|will|shall) i (?:take|bring|need|pack|wear) (?:an |a |my )?(?:umbrella"
     r"|raincoat|rain jacket|jacket|coat|sunscreen|sunglasses)(?: today| tomorrow| tonight"
     r"| now| outside| later)?$|\btemperature (?:\w+ )?(?:going to be|gonna be|will be)\b"
     r"|^what will the (?:temperature|weather) be\b"
     # Any other request that names the weather ("Tell me, Berlin weather light." as tiny.en
     # heard "… weather like"): the 0.5B made up "Berlin weather light is clear.".
     r"|(?<!under the )\bweather\b(?! (?:balloons?|vanes?|stations?|systems?|patterns?|maps?"
     r"|radar|satellites?|the storm|man|channel|apps?)\b)"),
    ("I can't get the news: " + _OFFLINE,
     r"^(?:(?:what's|what is|what are|tell me|read me|give me|play|get me|show me|read|any|check"
     r"|catch me up on) )?(?:the )?(?:latest |today's |top |current |breaking |morning |evening "
     r"|local |world |sports |tech |business )?(?:news|headlines)(?: headlines| today"
     r"| this morning| tonight| right now| now| for today| about .+| on .+| from .+)?$"
     r"|^what's (?:happening|going on) in the world\b|^what's (?:happening )?in the news\b"
     r"|\bwho(?:'s| is) (?:winning|leading|ahead in) the (?:election|polls|vote|race)\b"
     r"|\belection results\b|^what's on (?:netflix|tv|television|the tv|hulu|disney plus"
     r"|prime video)(?: tonight| today| now| right now)?$"),
    ("I can't see your calendar: " + _BOX,
     r"\bmy (?:calendar|schedule|agenda|diary)\b|\bmy (?:next )?(?:meetings?|appointments?)\b"
     r"|\bwhat's on the (?:calendar|agenda)\b|\bdo i have (?:any |a )?(?:meetings?|appointments?"
     r"|events?|plans)\b|^(?:schedule|book|set up|cancel|move|reschedule|add) (?:a |an |my |the )?"
     r"(?:meeting|appointment|event)\b|\bam i (?:free|busy) (?:today|tomorrow|tonight|on|at|this"
     r"|next)\b"),
    ("I can't play music: I work offline, with no music service.",
     r"^(?:play|put on|shuffle|queue(?: up)?|start playing|resume|skip|pause|stop)\b.*\b(?:music"
     r"|songs?|album|playlist|radio|station|track|tunes?|spotify|podcast|audiobook|jazz|rock"
     r"|classical|hip hop)\b|^play (?!a game|(?:some )?games?\b|twenty|20|chess|with|hide|tic"
     r"|a quiz|trivia|the game)[\w' ]+ by [\w' ]+$|^(?:next|previous) (?:song|track)$"
     r"|^turn (?:up|down) the (?:music|volume)\b|^what song is (?:this|playing)\b"),
    ("I can't check sports scores: " + _OFFLINE,
     r"\bwhat(?:'s| is| was) the (?:latest |final |current )?score\b|\b(?:football|soccer"
     r"|basketball|baseball|hockey|cricket|tennis|rugby|nba|nfl|nhl|mlb|premier league"
     r"|champions league|formula 1|formula one|f1) (?:scores?|results?|standings|fixtures|table)\b"
     r"|\bwho won (?:the |last night's |today's |yesterday's |tonight's )(?:game|match|race|fight)"
     r"\b|\bwho (?:won|is winning|'s winning) (?:last night|yesterday|today|tonight|right now)\b"
     r"|\bwho won (?:the )?[\w ]+ (?:last night|yesterday|today|tonight|this (?:week|weekend"
     r"|season)|last (?:week|weekend))$|^how did (?:the )?[\w ]+ do (?:last night|yesterday"
     r"|today|tonight|this (?:week|weekend|season)|last (?:week|weekend))$"
     r"|\bdid (?:the )?[a-z ]+ win (?:last night|yesterday|today|tonight|their game|the game"
     r"|the match)\b|\b(?:when|what time) do (?:the )?[a-z ]+ play (?:next|tonight|today|tomorrow)"
     r"\b"),
    ("I can't check live prices: " + _OFFLINE,
     r"\b(?:stock|share) prices?\b|\bprice of (?:a |one )?(?:bitcoin|ethereum|gold|oil|gas|petrol"
     r"|\w+ (?:stock|shares))\b|\b(?:bitcoin|ethereum|crypto|gold|oil) prices?\b|\bhow(?: is|'s)"
     r" (?:the )?(?:stock market|market|dow|nasdaq|bitcoin|\w+ stock) (?:doing|today|now)\b"
     r"|\bexchange rate\b|\bdow jones\b|\bnasdaq\b|\bhow much is (?:a |one )?bitcoin\b"
     r"|\bwhat's \w+ (?:stock )?trading at\b|^what(?:'s| is) (?:bitcoin|ethereum|dogecoin"
     r"|crypto|gold|oil|\w+ stock|\w+ shares) (?:at|worth)\b"
     rf"|\b(?:convert )?\d+(?:\.\d+)? {_CURRENCY} (?:to|into|in) {_CURRENCY}$"
     rf"|\bhow many {_CURRENCY} (?:is|are|in|to|for) (?:a |an |one |\d+ )?{_CURRENCY}$"),
    ("I can't check traffic or directions: " + _OFFLINE,
     r"\btraffic\b(?! lights?\b| cones?\b| laws?\b| signs?\b)|\b(?:directions|navigate|route) to\b"
     r"|\bhow (?:long|far) (?:will|does) it take (?:me )?to (?:drive|get|walk|cycle|commute) to\b"
     r"|\bhow long is (?:my|the) (?:commute|drive) to\b|^how do i get to\b"
     r"|\bnearest (?:gas station|petrol station|pharmacy|hospital|restaurant|atm|bank"
     r"|supermarket|store|shop|charging station)\b|\b(?:gas|petrol) prices?\b"),
    ("I can't look up opening hours: " + _OFFLINE,
     rf"\bwhat time (?:does|do|is) {_PLACE} (?:open|close|closing|opening|shut)\b"
     rf"|\bwhen (?:does|do|is) {_PLACE} (?:open|close|closing|opening|shut)\b"
     r"|^is (?!it\b|(?:the |my )?(?:front |back |garage |side )?(?:door|window|gate|fridge)\b)"
     rf"{_PLACE} (?:open|closed)(?: now| today| tonight| tomorrow| right now| on \w+| late| yet)?$"
     r"|\bopening (?:hours|times)\b|\b(?:business|store|shop) hours\b"
     rf"|\bwhat are the hours (?:of|for)\b|\bhow late is {_PLACE} open\b"),
    ("I can't send messages or make calls: " + _BOX,
     r"^(?:send (?:a |an |the |my |this |that )?(?:message|text|email|e-mail|sms|reply|whatsapp)s?"
     r"|text|message|email"
     r"|e-mail|call|phone|dial|facetime|video call|whatsapp) (?!(?:me|it|that|this|us|them|back"
     r"|a day|for)\b)|\b(?:read|check|open|show me) (?:my )?(?:new |unread |latest )?(?:messages"
     r"|texts|e[- ]?mails?|mail|inbox|voicemails?|notifications)\b"
     r"|\bdo i have (?:any )?(?:new )?(?:messages|texts|emails|voicemails?|missed calls)\b"),
    ("I can't control devices in your home: I'm not connected to them.",
     rf"^(?:turn|switch|shut|flip|put) (?:on|off|up|down) (?:the |my |all (?:the )?)?(?:[\w ]+ )?"
     rf"{_DEVICE}\b|^(?:turn|switch) (?:the |my |all (?:the )?)?(?:[\w ]+ )?{_DEVICE} (?:on|off|up"
     rf"|down)\b|^(?:dim|brighten) (?:the |my )?(?:[\w ]+ )?(?:lights?|lamps?)\b|^set (?:the |my )?"
     r"(?:thermostat|heating|ac|air conditioning|lights?) to\b|^(?:lock|unlock|open|close) (?:the |my )?"
     r"(?:front |back |garage |side )?(?:door|garage|garage door|gate|blinds|curtains|shades"
     r"|windows?)$|^make (?:it|the room) (?:warmer|cooler|brighter|darker)\b"
     r"|^is the (?:front |back )?door locked\b"
     r"|^(?:turn|switch|change|put) (?:the |my )?(?:tv|television|radio) (?:on )?to\b"),
    ("I can't search the web: " + _OFFLINE,
     r"^(?:search|google|bing)\b(?! engines?\b| for (?:a |the )?(?:file|word|folder)s?\b)"
     r"|\b(?:search|browse) (?:the )?(?:web|internet|online)\b|^look (?:\w+ )?up\b.*\b(?:online"
     r"|on the (?:web|internet)|on google)$|^(?:find|find me|look for|locate) .+ (?:near me|nearby"
     r"|around here|online)$"),
    ("I can't order or book anything: " + _OFFLINE,
     r"^(?:order|buy|purchase|reorder) (?!(?:or|of|these|those|them|it|the (?:list|numbers|words"
     r"|letters))\b)(?:me |us |some |a |an |more |another |the |my |new |\d+ )*\w+"
     r"|^(?:book|reserve) (?:me |us )?(?:a |an |the |my |two |\d+ |some )?(?:[\w']+ ){0,2}(?:table"
     r"|flight|hotel|room|taxi|cab|ride|tickets?|train|bus|seat|car|holiday|vacation|trip|stay)\b"
     r"|^(?:get|call|order|book) me an? (?:uber|lyft|taxi|cab|ride)\b|^add .+ to (?:my )?(?:amazon"
     r"|cart|basket)\b"),
)
_MATCHERS = tuple((re.compile(pattern), reply) for reply, pattern in _CATEGORIES)


_WEATHER_REPLY = _CATEGORIES[0][0]
_NOT_A_PLACE = frozenset(
    """today tomorrow tonight weekend week current local the like outside now me us this
    morning afternoon evening tell what what's how's is it going to be a my our your here
    there forecast report about know want check give get show any some latest bad good nice
    cold hot""".split()
)
_PLACE_AFTER = re.compile(r"\bweather\b.*?\b(?:in|for|at) ([a-z][a-z' -]*?)"
                          r"(?: (?:today|tomorrow|tonight|this \w+|now|right now|like|please))*$")
_PLACE_BEFORE = re.compile(r"^(?:(?:what's|what is|how's|how is|tell me|give me) )?(?:the )?"
                           r"([a-z][a-z' ]*?)(?:'s)? weather\b")


def weather_place(request: str) -> str | None:
    """The place a weather request names ("weather in new york" → "New York", "berlin
    weather" → "Berlin"), None where it names none (up to three words, no time word)."""
    for pattern in (_PLACE_AFTER, _PLACE_BEFORE):
        if (found := pattern.search(request)) is None:
            continue
        words = found[1].split()
        if 0 < len(words) <= 3 and not _NOT_A_PLACE & set(words):
            return " ".join(word.capitalize() for word in words)
    return None


def _spoken(reply: str, request: str, ctx: SkillContext) -> str:
    """The decline as said: the weather's names the place asked about, and one already
    given in this conversation (for any place) is told as still so ("I still can't …")."""
    cannot = reply.split(":", 1)[0]
    given = any(said.startswith(cannot) for said in (*ctx.earlier, ctx.previous))
    if reply == _WEATHER_REPLY and (place := weather_place(request)) is not None:
        reply = reply.replace("the weather:", f"the weather in {place}:")
    if given:
        reply = reply.replace("I can't", "I still can't", 1)
    return reply


class OfflineSkill:
    """Requests that need the internet or a connected device: one honest sentence."""

    name = "offline"

    def answer(self, text: str, ctx: SkillContext) -> SkillReply | None:
        request = digits(core(text))
        if _KNOWLEDGE.match(request):
            return None
        for pattern, reply in _MATCHERS:
            if pattern.search(request):
                # A follow-up ("and in Paris?") is refused from the plain sentence.
                return SkillReply(text=_spoken(reply, request, ctx),
                                  skill=self.name, refusal=True,
                                  result=LastResult(skill=self.name, kind="refusal", topic=reply))
        return None
