"""pipeline.answer.tools: a tool call becomes the plain request the skills understand, believed
only as far as the user's words support it."""

from __future__ import annotations

import json

import pytest

from pipeline.answer.tools import (
    TOOLS,
    in_calls_only,
    may_be_call,
    may_call,
    refused,
    request_for,
    without_markers,
)


def call(tool: str, **arguments: str) -> str:
    return json.dumps({"name": tool, "arguments": arguments})


@pytest.mark.parametrize(("text", "said", "plain"), [
    (call("set_timer", duration="10 minutes"), "Let me know when ten minutes are up.",
     "set a timer for 10 minutes"),
    (call("set_timer", duration="8 minutes", name="pasta"), "Eight minutes for the pasta, please.",
     "set a pasta timer for 8 minutes"),
    (call("convert_units", quantity="3 ounces", unit="grams"), "How many grams is three ounces?",
     "convert 3 ounces to grams"),
    (call("calculate", expression="17 * 3"), "What's seventeen times three?", "what is 17 * 3"),
    (call("spell_word", word="rhythm"), "Can you spell rhythm for me?", "how do you spell rhythm"),
])
def test_a_call_the_user_asked_for_becomes_the_plain_request(text: str, said: str,
                                                              plain: str) -> None:
    assert request_for(text, said) == plain


def test_an_invented_name_is_left_out_and_invented_items_dropped() -> None:
    assert request_for(call("set_timer", duration="10 minutes", name="pasta"),
                       "Let me know when ten minutes are up.") == "set a timer for 10 minutes"
    assert request_for(call("add_to_list", items="bananas and milk"),
                       "Could you put bananas on my shopping list?") == \
        "add bananas to my shopping list"


def test_a_call_the_words_do_not_support_is_not_believed() -> None:
    # Misheard in noise ("leap" → "late"): the 0.5B set a timer for 1900 minutes.
    assert request_for(call("set_timer", duration="1900 minutes"), "was 1900 a late year.") is None
    assert request_for(call("set_alarm", time="19:00"), "Was 1900 a leap year?") is None
    assert request_for(call("set_alarm", time="7 pm"), "Ring an alarm at 7 pm.") == \
        "set an alarm for 7 pm"
    assert request_for(call("set_timer", duration="3 hours"), "Three hours, then tell me.") == \
        "set a timer for 3 hours"
    assert request_for(call("current_time", what="time"), "How are you today?") is None
    assert request_for(call("set_timer", duration="20 minutes"), "Ten minutes, please.") is None
    assert request_for(call("add_to_list", items="milk"), "Put bread on my list.") is None
    assert request_for(call("timer_status", action="left"),
                       "How long is left of the school year?") is None
    assert request_for(call("timer_status", action="left"), "How long is left?") is not None


@pytest.mark.parametrize("said", ["Increase my timer for 2 hour, minute into 1 seconds.",
                                  "That was four minutes to my timer.",
                                  "Decrease the timer by 3 minutes.",
                                  "Take 5 minutes off the timer."])
def test_a_change_to_a_running_timer_never_starts_a_new_one(said: str) -> None:
    # The 0.5B answered these, misheard or not caught by an intent, with set_timer.
    assert request_for(call("set_timer", duration="2 hours"), said) is None
    assert refused('{"name": "set_timer", ', said)
    assert request_for(call("set_timer", duration="10 minutes"),
                       "Set a timer for 10 minutes to take the bread out.") is not None


@pytest.mark.parametrize("text", ["not json", '{"name": "nope", "arguments": {}}',
                                  '{"name": "set_timer"', '{"name": "set_timer", "arguments": 3}'])
def test_a_malformed_or_unknown_call_is_none(text: str) -> None:
    assert request_for(text, "set a timer for 5 minutes") is None


def test_doubled_braces_and_the_tool_call_tag_are_read() -> None:
    text = "<tool_call>\n{" + call("set_alarm", time="7 am") + "}"
    assert may_be_call(text)
    assert request_for(text, "Wake me up at seven.") == "set an alarm for 7 am"


def test_text_is_held_only_while_it_could_be_a_call() -> None:
    """JSON is never said, whatever its key (a reply '{"text": …}' is asked for in words)."""
    assert may_be_call("") and may_be_call("{") and may_be_call('{"na') and may_be_call('{"text"')
    assert not may_be_call("The capital") and not may_be_call('"Hello" is a greeting')


def test_a_call_in_a_markdown_code_block_is_held_and_read() -> None:
    text = "```json\n" + call("set_timer", duration="5 minutes") + "\n```"
    assert all(may_be_call(text[:n]) for n in range(1, len(text) - 4))
    assert request_for(text, "Set a timer for 5 minutes.") == "set a timer for 5 minutes"
    assert not may_be_call("```python") and not may_be_call("``` The answer")


@pytest.mark.parametrize("opening", ["```json\n", "json\n", ""])
def test_a_pretty_printed_call_is_held_and_read(opening: str) -> None:
    """'{\n  "name": …' (the 0.5B wrote one, and "json name: set timer," was said aloud)."""
    text = opening + '{\n  "name": "set_timer",\n  "arguments": {"duration": "5 minutes"}\n}'
    assert all(may_be_call(text[:n]) for n in range(1, 20))
    assert request_for(text, "Set a timer for 5 minutes.") == "set a timer for 5 minutes"


def test_every_tool_has_a_request() -> None:
    names = {tool["function"]["name"] for tool in TOOLS}
    assert all(request_for(call(n, duration="5 minutes", time="5 pm", task="x", action="left",
                                items="x", expression="5", quantity="5 grams", unit="ounces",
                                word="x"), "list 5 x remind timer spell time alarm") is not None
               for n in names)


@pytest.mark.parametrize("text", [
    "json\nname: set_timer\narguments: duration: 20 minutes",
    '``` json\n{"name": "set_timer", "arguments": {"duration": "20 minutes"}}',
    '```\njson\n{name: "set_timer", arguments: {duration: "20 minutes"}}',
    '[ "name": "set timer", "arguments": {"duration": "20 minutes"} ]',
    '[{"name": "set_timer", "arguments": {"duration": "20 minutes"}}]',
    '[ "set timer", "parameters": {"duration": "20 minutes"} ]',
    '{"set_timer": {"duration": "20 minutes"}}',
])
def test_a_call_written_loosely_is_held_and_never_said(text: str) -> None:
    """The 0.5B said "json name: set timer," aloud: whatever follows the marker, a `name`
    key is held; one that is not JSON is not run (the turn is answered in words)."""
    assert all(may_be_call(text[:n]) for n in range(1, len(text) + 1))
    request = request_for(text, "Could you wake me up in 20 minutes?")
    assert request is None or request == "set a timer for 20 minutes"


def test_a_reply_that_merely_starts_like_a_marker_is_not_held() -> None:
    for text in ("Names of the planets", "``` The answer", "```python", "json is a format",
                 "{The set", "[1] The", "[Laughs"):
        assert not may_be_call(text), text


@pytest.mark.parametrize("missing", ["}", "}}"])
def test_a_call_missing_its_closing_braces_is_read(missing: str) -> None:
    """The 0.5B stopped before the last brace (then the turn went to words and a call
    was said aloud)."""
    text = call("set_timer", duration="20 minutes", name="pasta")
    assert text.endswith("}}")
    cut = text.removesuffix(missing)
    assert request_for(cut, "Could you wait meet up in 20 minutes?") == \
        "set a timer for 20 minutes"
    assert request_for("```json\n" + cut + "\n```", "Wake me in 20 minutes.") == \
        "set a timer for 20 minutes"


def test_held_text_that_is_not_a_call_is_said_without_its_fence_or_tag() -> None:
    assert without_markers("```json\nThe capital is Paris.") == "The capital is Paris."
    assert without_markers("``` The answer") == "The answer"
    assert without_markers("<tool_call>Paris.") == "Paris."
    assert without_markers("json is a format") == "json is a format"
    assert without_markers(" The capital") == " The capital"


@pytest.mark.parametrize(("text", "said", "plain"), [
    ('<tools> <function name="set timer"> <arguments> <duration>10 minutes</duration>'
     " <name>pasta</name> </arguments> </function> </tools>",
     "Ten minutes for the pasta, please.", "set a pasta timer for 10 minutes"),
    ("<function=set_timer>\n<parameter=duration>\n5 minutes\n</parameter>\n</function>",
     "Set a timer for five minutes.", "set a timer for 5 minutes"),
    ('<invoke name="convert_units"><parameter name="quantity">3 ounces</parameter>'
     '<parameter name="unit">grams</parameter></invoke>', "How many grams is three ounces?",
     "convert 3 ounces to grams"),
    ('<tools> <function name="set timer"> <arguments> <duration>1900</duration>', "was 1900 a"
     " leap year.", None),
])
def test_a_call_written_as_markup_is_held_and_read(text: str, said: str,
                                                   plain: str | None) -> None:
    """Markup is never said: a reply opening with a tag is held to its end, and read as a
    call if it is one the user's words support."""
    assert all(may_be_call(text[:n]) for n in range(1, len(text) + 1))
    assert request_for(text, said) == plain


def test_a_reply_that_opens_with_a_less_than_sign_is_not_held() -> None:
    assert not may_be_call("< 5 is less") and not may_be_call("<3 you")


def test_a_reply_in_other_markup_is_held_only_until_its_first_tag_is_read() -> None:
    assert may_be_call("<") and may_be_call("<b") and not may_be_call("<b>Paris")
    assert not may_be_call("<p>Hello") and may_be_call("<Tools>") and may_be_call("</function")


@pytest.mark.parametrize(("said", "expected"), [
    ("What is the capital of Peru?", False),
    ("Tell me a joke.", False),
    ("Let me know when ten minutes are up.", True),
    ("Remind me to call mum.", True),
    ("What's on my list?", True),
    ("What's 15% of 80?", True),
    ("What day is it?", True),
    ("How long is left?", True),
    ("How much time is left on the pasta?", True),
    ("How many days are left until Christmas?", False),
])
def test_may_call_only_where_a_call_could_be_believed(said: str, expected: bool) -> None:
    assert may_call(said) is expected


TIME_DIFFERENCE = "What is the time difference between London and Paris?"


@pytest.mark.parametrize(("held", "said", "expected"), [
    ('{"name": "set_timer"', TIME_DIFFERENCE, True),
    ('{"name": "set_', TIME_DIFFERENCE, False),  # the name is not written out yet
    ('{"name": "current_time", ', TIME_DIFFERENCE, False),
    ('{"name": "set_timer", ', "Set a timer for ten minutes.", False),
    ('<tools>\n  <function name="set timer">', "How many days are there in a", True),
    ('```json\nname: set_timer, ', "How many days are there in a", True),
    ('{"name": "weather", ', TIME_DIFFERENCE, True),  # no such tool
    ('[ "set timer", "parameters":', TIME_DIFFERENCE, False),  # no name key: heard to its end
])
def test_a_call_is_refused_as_soon_as_it_names_a_tool_the_words_cannot_support(
    held: str, said: str, expected: bool,
) -> None:
    assert refused(held, said) is expected


@pytest.mark.parametrize("token", [b"{", b' {"', b"[", b"<tool_call>", b"<", b"```", b"`",
                                   b" json", b"JSON", b"_timer", b" function", b"Functions",
                                   b" tool", b" tools"])
def test_tokens_of_calls_and_tool_talk_are_kept_from_a_reply_in_words(token: bytes) -> None:
    assert in_calls_only(token)


@pytest.mark.parametrize("token", [b" The", b" days", b" 365", b".", b",", b'"', b" hour",
                                   b" Paris", b"\n", b""])
def test_tokens_of_words_are_not(token: bytes) -> None:
    assert not in_calls_only(token)
