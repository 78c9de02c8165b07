"""What a reply is worth, as rules: right, new, not an echo, short, honest about what it cannot do.

Pure functions (no I/O, no model) shared by `apace bench --quality`, which scores scripted
conversations, and the server, which flags each turn for the dashboard. Everything works on
normalised text (`normalise`): lower case, words only, so "Paris!" and "paris" agree and a
rule's regex never has to care about punctuation.

Why these checks: measured from outside, a small model got stuck repeating one sentence,
restated the question as its answer, and invented the weather. Each of
those is one function here, so a regression shows up as a number, not an anecdote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

WORDS_PER_SECOND = 2.6
"""A Piper voice at its default pace speaks about this many words a second."""
DEFAULT_MAX_SENTENCES = 2

_WORD = re.compile(r"\w+(?:['.:]\w+)*")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_REFUSAL = re.compile(
    r"\b(?:can't|cannot|can not|couldn't|unable|not able|don't know|do not know"
    r"|(?:don't|do not|doesn't|does not) have (?:access|any access|a way|any way|the ability"
    r"|internet|an internet|a connection|real.time|live)"
    r"|(?:i have|i've got|i've|there is|there's|with|have) no (?:access|internet|connection)"
    r"|offline|not connected|not available|isn't available"
    r"|without (?:internet|an internet|a connection|access))\b")

STOPWORDS = frozenset("""
a an the and or but if so of to in on at by for with from into about as than then that this
these those there here it its it's is are was were be been being am do does did doing done
have has had will would shall should can could may might must i i'm i'll i've me my mine
you you're your yours we our us he she him her his they them their what what's which who
whom whose when where why how how's please just also too very really some any all no not
yes yeah yep okay ok sure well oh hey hi hello right now let let's me up out over again
one's thing things much many more most
""".split())
"""Words that carry no answer: an echo is judged on the other ("content") words."""
GREETINGS = frozenset(
    "hello hi hey good morning afternoon evening night day goodbye bye see you later there"
    " welcome".split())
"""A reply of these (and stop words) returns a greeting: small talk, not an echo."""

_NUMBERS = {word: str(n) for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    " fifteen sixteen seventeen eighteen nineteen twenty".split())}
_NUMBERS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70",
                 "eighty": "80", "ninety": "90", "hundred": "100", "thousand": "1000"})


def normalise(text: str) -> str:
    """Lower-case words separated by single spaces: punctuation dropped, except what a
    number or a contraction needs ("3.5", "3:45", "it's"); "1,000" → "1000"; "°" and
    "%" spelled out as a voice would say them; hyphens separate ("c-a-t" → "c a t")."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").lower()
    text = _THOUSANDS.sub("", text).replace("°", " degrees ").replace("%", " percent ")
    return " ".join(_WORD.findall(text))


def words(text: str) -> list[str]:
    return normalise(text).split()


def word_trigrams(text: str) -> frozenset[tuple[str, str, str]]:
    """The distinct runs of three consecutive normalised words."""
    w = words(text)
    return frozenset(zip(w, w[1:], w[2:], strict=False))


def is_repeat(reply: str, earlier_replies: Iterable[str], threshold: float = 0.5) -> bool:
    """True when more than `threshold` of the reply's word trigrams are found in one earlier
    reply and it says nothing that reply did not (no new content word) — the collapse where
    a small model answers every question with an old, often truncated, reply.

    A template with a new answer in it is not a repeat ("The language there is Spanish."
    after "The language there is Portuguese."; "Added eggs ..." after "Added milk ...").
    A reply under three words has no trigram worth counting: it repeats only when it equals
    an earlier reply after normalising ("Yes." twice is a repeat; "Paris." then "Berlin." not).
    """
    text = normalise(reply)
    if not text:
        return False
    if len(text.split()) < 3:
        return any(text == normalise(e) for e in earlier_replies)
    mine, new = word_trigrams(text), content_words(text)
    return any(len(mine & word_trigrams(e)) / len(mine) > threshold and new <= content_words(e)
               for e in earlier_replies)


def _stem(word: str) -> str:
    word = _NUMBERS.get(word, word)
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def content_words(text: str) -> set[str]:
    """The words that could carry an answer, stemmed ("minutes" → "minute", "eight" → "8")."""
    return {_stem(w) for w in words(text) if w not in STOPWORDS}


def _stemmed_trigrams(text: str) -> frozenset[tuple[str, ...]]:
    w = [_stem(word) for word in words(text)]
    return frozenset(zip(w, w[1:], w[2:], strict=False))


def is_echo(reply: str, question: str) -> bool:
    """True when the reply only restates the question: it adds no content word to the
    question's, and it keeps the question's wording (half its trigrams, or all of a reply
    under three words). "Paris." for "What is the capital of France?" adds a word and is an
    answer; "The capital of France." is an echo. A confirmation in its own words ("Eggs
    timer set for 3 minutes." for "Set a timer for three minutes for the eggs.") is not;
    "Sure, an 8 minute timer for the pasta." is. A reply of no content words ("Yes."), a
    greeting returned ("Good morning!") and an honest refusal say something else."""
    mine = content_words(reply)
    if not mine or (is_refusal(reply) and not is_refusal(question)):
        return False
    if all(w in GREETINGS or w in STOPWORDS for w in words(reply)):
        return False
    if not mine <= content_words(question):
        return False
    said = _stemmed_trigrams(reply)
    return not said or len(said & _stemmed_trigrams(question)) / len(said) >= 0.5


def spoken_seconds(text: str, audio_s: float | None = None) -> float:
    """How long the reply takes to say: the audio's duration when known, else its words at
    `WORDS_PER_SECOND`."""
    if audio_s is not None:
        return round(audio_s, 2)
    return round(len(words(text)) / WORDS_PER_SECOND, 2)


def is_refusal(text: str) -> bool:
    """An honest "I cannot do that": can't / cannot / unable / don't have access / offline …"""
    return bool(_REFUSAL.search(normalise(text)))


def sentences(text: str) -> int:
    """Sentences in the reply: pieces ended by . ! or ? and a space (so "3.5" is one), the
    last one counted without an end mark too."""
    return sum(1 for piece in _SENTENCE_END.split(text.strip()) if _WORD.search(piece))


class RuleError(ValueError):
    """A rule that cannot be used; the message names where it was written."""


@dataclass(frozen=True, kw_only=True)
class Rule:
    """What a right reply to one question looks like, written next to the question."""

    accept: tuple[re.Pattern[str], ...] = ()
    """Any one matching (searched in the normalised reply) makes it right; none: no check."""
    must: tuple[str, ...] = ()
    """Phrases that must all be said (whole words, normalised)."""
    must_not: tuple[str, ...] = ()
    """Phrases that must not be said (an invented forecast, a timer that was not asked for)."""
    refusal: bool | None = None
    """True: it must say it cannot; False: it must not refuse; None: either."""
    max_sentences: int = DEFAULT_MAX_SENTENCES

    @property
    def checks(self) -> bool:
        """Whether anything here decides right or wrong (else the turn's `right` is None)."""
        return bool(self.accept or self.must or self.must_not or self.refusal is not None)


RULE_KEYS = frozenset({"accept", "must", "must_not", "refusal", "max_sentences"})


def parse_rule(table: Mapping[str, object], where: str,
               substitutions: Mapping[str, str] | None = None) -> Rule:
    """A `Rule` from its TOML table. `where` ("conversation 'x' turn 2") starts every error.
    `substitutions` replace "{key}" placeholders in patterns and phrases (e.g. "{today}"
    with today's weekday), so a rule about the date can be written down."""
    if unknown := sorted(set(table) - RULE_KEYS):
        raise RuleError(f"{where}: unknown key(s) {', '.join(unknown)}")
    subs = substitutions or {}
    accept = tuple(_compile(p, f"{where}: accept[{i}]")
                   for i, p in enumerate(_strings(table, "accept", where, subs)))
    refusal = table.get("refusal")
    if refusal is not None and not isinstance(refusal, bool):
        raise RuleError(f"{where}: refusal must be true or false, not {refusal!r}")
    most = table.get("max_sentences", DEFAULT_MAX_SENTENCES)
    if not isinstance(most, int) or isinstance(most, bool) or most < 1:
        raise RuleError(f"{where}: max_sentences must be a positive integer, not {most!r}")
    return Rule(accept=accept, must=_strings(table, "must", where, subs),
                must_not=_strings(table, "must_not", where, subs), refusal=refusal,
                max_sentences=most)


def _strings(table: Mapping[str, object], key: str, where: str,
             subs: Mapping[str, str]) -> tuple[str, ...]:
    value = table.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise RuleError(f"{where}: {key} must be a list of non-empty strings, not {value!r}")
    out = []
    for text in value:
        for name, replacement in subs.items():
            text = text.replace("{" + name + "}", replacement)
        out.append(text)
    return tuple(out)


def _compile(pattern: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as error:
        raise RuleError(f"{where} is not a valid regex ({error}): {pattern!r}") from None


@dataclass(frozen=True, kw_only=True)
class TurnScore:
    """One reply, judged. `right` is None when the question has no rule."""

    right: bool | None
    repeat: bool
    echo: bool
    refusal: bool
    spoken_s: float
    sentences: int
    reasons: tuple[str, ...] = field(default=())
    """Why it is not right (or, without a rule, what is still wrong with it)."""


def _said(phrase: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(normalise(phrase))}(?!\w)", text) is not None


def score_turn(rule: Rule, reply: str, question: str, earlier: Sequence[str], *,
               audio_s: float | None = None) -> TurnScore:
    """Judge `reply` to `question` by `rule`, given the conversation's earlier replies.

    A reply is right only if the rule's checks pass and it is also new (no repeat), not an
    echo, and no longer than the rule's sentence limit: a fast wrong answer is a failure.
    No reply at all is wrong even where the question has no rule.
    """
    text = normalise(reply)
    repeat, echo, refusal = is_repeat(reply, earlier), is_echo(reply, question), is_refusal(reply)
    count = sentences(reply)
    reasons: list[str] = []
    if not text:
        reasons.append("no reply")
    elif rule.accept and not any(p.search(text) for p in rule.accept):
        reasons.append("no accepted answer")
    reasons += [f"missing {p!r}" for p in rule.must if text and not _said(p, text)]
    reasons += [f"said {p!r}" for p in rule.must_not if _said(p, text)]
    if text and rule.refusal is not None and refusal != rule.refusal:
        reasons.append("did not say it cannot" if rule.refusal else "refused")
    if repeat:
        reasons.append("repeats an earlier reply")
    if echo:
        reasons.append("echoes the question")
    if count > rule.max_sentences:
        reasons.append(f"{count} sentences (max {rule.max_sentences})")
    right = (not reasons if rule.checks else None) if text else False
    return TurnScore(right=right, repeat=repeat, echo=echo,
                     refusal=refusal, spoken_s=spoken_seconds(reply, audio_s), sentences=count,
                     reasons=tuple(reasons))


def failed(score: TurnScore, reason: str) -> TurnScore:
    """`score` made wrong for a reason only the transport sees (no reply, a missing timer
    event, a reply cut off that the user never interrupted)."""
    return TurnScore(right=False, repeat=score.repeat, echo=score.echo, refusal=score.refusal,
                     spoken_s=score.spoken_s, sentences=score.sentences,
                     reasons=(*score.reasons, reason))


def turn_flags(reply: str, question: str, earlier: Sequence[str], *,
               audio_s: float | None = None) -> dict[str, object]:
    """The rule-free checks of one live turn, for the dashboard and /api/turns: a repeat,
    an echo, a refusal, how long it took to say, and `ok` when none of the first two and
    it was at most `DEFAULT_MAX_SENTENCES` sentences."""
    score = score_turn(Rule(), reply, question, earlier, audio_s=audio_s)
    return {"ok": not score.reasons, "repeat": score.repeat, "echo": score.echo,
            "refusal": score.refusal, "spoken_s": score.spoken_s,
            "sentences": score.sentences, "reasons": list(score.reasons)}
