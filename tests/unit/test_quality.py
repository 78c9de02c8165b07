"""What a reply is worth (pipeline.quality) and the rules written next to each question."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from app.bench.conversations import (
    BLIND,
    CONVERSATIONS,
    HELD_OUT,
    conversation_set,
    date_substitutions,
    parse_conversations,
)
from pipeline.quality import (
    Rule,
    RuleError,
    failed,
    is_echo,
    is_refusal,
    is_repeat,
    normalise,
    parse_rule,
    score_turn,
    sentences,
    spoken_seconds,
    word_trigrams,
)

# What a small model said to question after question once its history held cut-off copies.
COLLAPSE = "The capital of France is Paris, which is known for its beautiful"


def test_normalise_keeps_numbers_and_contractions_and_splits_spelled_letters() -> None:
    assert normalise("C-A-T. It's 3.5 km; 1,000 people at 3:45 PM!") == \
        "c a t it's 3.5 km 1000 people at 3:45 pm"
    assert normalise("Water boils at 100°C.") == "water boils at 100 degrees c"
    assert normalise("It\u2019s   FINE") == "it's fine"


def test_word_trigrams_are_the_distinct_runs_of_three_normalised_words() -> None:
    assert word_trigrams("Paris is nice. Paris is nice!") == {
        ("paris", "is", "nice"), ("is", "nice", "paris"), ("nice", "paris", "is")}
    assert word_trigrams("Two words") == frozenset()


def test_the_measured_collapse_is_a_repeat() -> None:
    """The same truncated sentence again, or a copy of it cut shorter, is a repeat."""
    assert is_repeat(COLLAPSE, [COLLAPSE])
    assert is_repeat("The capital of France is Paris, which is known", ["Hi!", COLLAPSE])


def test_distinct_replies_are_not_repeats() -> None:
    earlier = ["The capital of France is Paris.", "Berlin is the capital of Germany."]
    assert not is_repeat("The capital of Italy is Rome.", earlier)
    assert not is_repeat("Added milk to your shopping list.", ["Added eggs to your shopping list."])
    assert not is_repeat("Anything", [])


def test_short_replies_repeat_only_when_equal_after_normalising() -> None:
    assert is_repeat("Yes!", ["yes."])
    assert not is_repeat("Berlin.", ["Paris."])
    assert not is_repeat("", [""])


def test_repeat_threshold_is_the_share_of_the_replys_trigrams() -> None:
    earlier = ["alpha beta gamma delta epsilon"]
    reply = "alpha beta gamma delta beta alpha"  # abg bgd | gdb dba: half shared
    assert not is_repeat(reply, earlier)
    assert is_repeat(reply, earlier, threshold=0.4)


def test_a_template_with_a_new_answer_in_it_is_not_a_repeat() -> None:
    """Seen in a real run: a right answer to a follow-up in the first answer's words."""
    earlier = ["The language of the people is Portuguese."]
    assert not is_repeat("The language of the people is Spanish.", earlier)
    assert is_repeat("The language of the people is Portuguese, the people.", earlier)


def test_the_question_said_back_is_an_echo() -> None:
    question = "Start an eight minute timer for the pasta."
    assert is_echo(question, question)
    assert is_echo("Sure, an 8 minute timer for the pasta.", question)
    assert is_echo("The capital of France.", "What is the capital of France?")


def test_a_confirmation_in_its_own_words_or_a_greeting_returned_is_not_an_echo() -> None:
    """Seen in a real run: skill confirmations and small talk that a word-set rule called
    echoes."""
    assert not is_echo("Eggs timer set for 3 minutes.", "Set a timer for three minutes for the eggs.")
    assert not is_echo("OK, in 10 minutes I'll remind you to check the oven.",
                       "Remind me in ten minutes to check the oven.")
    assert not is_echo("Good morning!", "Good morning.")
    assert not is_echo("Goodbye, see you later.", "Goodbye!")
    assert is_echo("How are you today?", "How are you today?")
    assert is_echo("Thank you very much.", "Thank you very much.")
    assert is_echo("Tokyo.", "What's the time difference to Tokyo?")


def test_an_answer_is_not_an_echo() -> None:
    assert not is_echo("Paris.", "What is the capital of France?")
    assert not is_echo("The capital of France is Paris.", "What is the capital of France?")
    assert not is_echo("Timer set for 8 minutes for the pasta.",
                       "Start an eight minute timer for the pasta.")
    assert not is_echo("Yes.", "Is an hour longer than fifty minutes?")
    assert not is_echo("I can't check the weather tomorrow.", "What's the weather tomorrow?")


def test_spoken_seconds_from_words_or_audio() -> None:
    assert spoken_seconds("one two three four five six seven eight nine ten eleven twelve "
                          "thirteen") == 5.0
    assert spoken_seconds("anything at all", audio_s=2.345) == 2.35
    assert spoken_seconds("") == 0.0


def test_refusals_are_recognised_and_answers_are_not() -> None:
    for text in ("I can't check the weather.", "I cannot do that.", "I'm offline.",
                 "I don't have access to your calendar.", "Sorry, I'm not able to call.",
                 "I do not have internet access."):
        assert is_refusal(text), text
    for text in ("Paris.", "I can tell you: it is 144.", "Timer set for five seconds."):
        assert not is_refusal(text), text


def test_sentences_count_end_marks_but_not_decimals() -> None:
    assert sentences("Paris. It is 3.5 km wide! Really?") == 3
    assert sentences("Just a clause") == 1
    assert sentences("") == 0
    assert sentences("Hello...  ") == 1


def _rule(**table: object) -> Rule:
    return parse_rule(table, "test")


def test_a_right_answer_passes_every_check() -> None:
    score = score_turn(_rule(accept=[r"\bparis\b"]), "Paris.", "What is the capital of France?", [])
    assert score.right is True and score.reasons == ()
    assert (score.repeat, score.echo, score.refusal, score.sentences) == (False, False, False, 1)


def test_a_reply_without_an_accepted_answer_or_with_a_forbidden_phrase_is_wrong() -> None:
    rule = _rule(accept=[r"\bberlin\b"], must_not=["paris"])
    score = score_turn(rule, "It is Paris.", "And Germany?", [])
    assert score.right is False
    assert score.reasons == ("no accepted answer", "said 'paris'")


def test_must_phrases_are_whole_words() -> None:
    rule = _rule(must=["eggs", "milk"])
    assert score_turn(rule, "You have milk and eggs.", "What's on my list?", []).right
    score = score_turn(rule, "You have milkshake and eggs.", "What's on my list?", [])
    assert score.reasons == ("missing 'milk'",)


def test_refusal_expected_and_given_or_invented() -> None:
    rule = _rule(refusal=True, must_not=["sunny"])
    assert score_turn(rule, "Sorry, I can't check the weather offline.", "Weather?", []).right
    score = score_turn(rule, "Tomorrow will be sunny.", "What's the weather tomorrow?", [])
    assert score.reasons == ("said 'sunny'", "did not say it cannot")
    assert score_turn(_rule(refusal=False), "I cannot do that.", "Hello", []).reasons == ("refused",)


def test_a_right_answer_that_repeats_echoes_or_rambles_is_wrong() -> None:
    rule = _rule(accept=["paris"])
    assert score_turn(rule, COLLAPSE, "And France?", [COLLAPSE]).reasons == (
        "repeats an earlier reply",)
    echo = score_turn(_rule(accept=["timer"]), "Start a timer.", "Start a timer.", [])
    assert echo.echo and echo.right is False
    long = score_turn(rule, "Paris. It is big. It is old.", "Capital of France?", [])
    assert long.reasons == ("3 sentences (max 2)",)
    assert score_turn(parse_rule({"accept": ["paris"], "max_sentences": 3}, "t"),
                      "Paris. It is big. It is old.", "Capital of France?", []).right


def test_without_a_rule_right_is_none_but_no_reply_is_wrong() -> None:
    score = score_turn(Rule(), "Rome was founded long ago.", "Tell me about Rome.", [])
    assert score.right is None
    assert score_turn(Rule(), "", "Tell me about Rome.", []).right is False
    assert failed(score, "no timer_fired event").reasons == ("no timer_fired event",)
    assert failed(score, "x").right is False


def test_bad_regex_and_bad_values_name_where_they_were_written() -> None:
    with pytest.raises(RuleError, match=r"capitals' turn 2: accept\[1\] is not a valid regex"):
        parse_rule({"accept": ["ok", "(unclosed"]}, "conversation 'capitals' turn 2")
    with pytest.raises(RuleError, match="refusal must be true or false"):
        parse_rule({"refusal": "yes"}, "t")
    with pytest.raises(RuleError, match="must must be a list"):
        parse_rule({"must": [1]}, "t")
    with pytest.raises(RuleError, match="max_sentences"):
        parse_rule({"max_sentences": 0}, "t")
    with pytest.raises(RuleError, match="unknown key"):
        parse_rule({"acept": ["x"]}, "t")


GOOD = """
[[conversation]]
name = "one"
[[conversation.turn]]
say = "What day is it?"
accept = ['\\b{today}\\b', '\\d{1,2}']
[[conversation.turn]]
say = "And tomorrow?"
accept = ['{tomorrow}']
interrupt_after_s = 1
[[conversation.turn]]
say = "Bye."
"""


def test_conversations_parse_with_the_runs_date_in_their_rules() -> None:
    [conversation] = parse_conversations(GOOD, "x.toml", today=datetime.date(2026, 11, 30))
    assert conversation.name == "one" and not conversation.held_out
    first, second, third = conversation.turns
    assert [p.pattern for p in first.rule.accept] == [r"\bmonday\b", r"\d{1,2}"]
    assert second.interrupt_after_s == 1.0 and second.rule.accept[0].pattern == "tuesday"
    assert not third.rule.checks
    assert date_substitutions(datetime.date(2026, 1, 1))["yesterday"] == "wednesday"


@pytest.mark.parametrize(("text", "message"), [
    ("[[conversation]\nname = 'x'", r"x.toml: not valid TOML"),
    ("title = 'no conversations'", r"x.toml: no \[\[conversation\]\] tables"),
    ("[[conversation]]\nname = 'a'\n[[conversation.turn]]\nsay = 'Hi'\naccept = ['(']",
     r"x.toml: conversation 'a' turn 1: accept\[0\] is not a valid regex"),
    ("[[conversation]]\nname = 'a'\n[[conversation.turn]]\nsay = 'Hi'\n"
     "[[conversation.turn]]\nsay = 'Hi'\nwait_s = -1",
     r"conversation 'a' turn 2: wait_s must be 0-120"),
    ("[[conversation]]\nname = 'a'\n[[conversation.turn]]\nsay = 'Hi'\ninterrupt_after_s = 1",
     r"conversation 'a' turn 1: interrupt_after_s needs a next turn"),
    ("[[conversation]]\nname = 'a'\n[[conversation.turn]]\naccept = ['x']",
     r"conversation 'a' turn 1: needs `say`"),
    ("[[conversation]]\nname = 'a'\nheldout = true\n[[conversation.turn]]\nsay = 'Hi'",
     r"conversation 'a': unknown key\(s\) heldout"),
    ("[[conversation]]\n[[conversation.turn]]\nsay = 'Hi'", r"conversation 1: needs a name"),
])
def test_a_malformed_file_names_the_conversation_and_turn(text: str, message: str) -> None:
    with pytest.raises(RuleError, match=message):
        parse_conversations(text, "x.toml")


def test_duplicate_and_unknown_names_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(GOOD)
    with pytest.raises(RuleError, match="unique: one"):
        conversation_set(files=[(path, "tuned"), (path, "held_out")])
    with pytest.raises(RuleError, match="no conversation nope; there are: one"):
        conversation_set(["nope"], files=[(path, "tuned")])
    assert [c.name for c in conversation_set(["one"], files=[(path, "tuned")])] == ["one"]


def test_the_shipped_sets_cover_what_the_bench_promises() -> None:
    tuned = parse_conversations(CONVERSATIONS.read_text(), CONVERSATIONS.name)
    held = parse_conversations(HELD_OUT.read_text(), HELD_OUT.name, held_out=True)
    assert len(tuned) >= 10 and sum(len(c.turns) for c in tuned) >= 50
    assert len(held) >= 3 and sum(len(c.turns) for c in held) >= 15
    assert all(c.held_out for c in held) and not any(c.held_out for c in tuned)
    turns = [t for c in tuned + held for t in c.turns]
    assert all(len(t.say.split()) <= 12 for t in turns)
    assert sum(any(t.interrupt_after_s for t in c.turns) for c in tuned) >= 2
    assert any(t.expect_event == "timer_fired" for t in turns)
    assert any(c.restart_before for c in tuned)
    assert sum(t.rule.refusal is True for t in turns) >= 3
    blind = parse_conversations(BLIND.read_text(), BLIND.name, blind=True)
    assert all(c.held_out and c.blind for c in blind) and not any(c.blind for c in tuned + held)
    assert {c.name for c in conversation_set()} == {c.name for c in tuned + held + blind}


def test_a_joke_about_having_no_internet_is_not_a_refusal() -> None:
    assert not is_refusal("Why was the computer sad? Because it had no Internet.")
    assert is_refusal("I have no internet access, so I can't check that.")
    assert is_refusal("I work offline, with no internet.")


def test_an_event_the_server_never_sends_is_refused_in_a_rule() -> None:
    """`no_event = "timer_set"` named nothing the server sends: the check could never fail."""
    text = '[[conversation]]\nname = "t"\n[[conversation.turn]]\nsay = "Hi."\nno_event = "timer_set"\n'
    with pytest.raises(RuleError, match="no_event must be one of the events the server sends"):
        parse_conversations(text, "x.toml")
    turns = parse_conversations(text.replace("timer_set", "timers"), "x.toml")[0].turns
    assert turns[0].no_event == "timers"
