"""Reply/TTS caches (bounds, keys, invalidation) and the draft mechanism's bookkeeping."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.answer.caches import CachedSynthesizer, LruCache, ReplyCache
from pipeline.answer.drafts import Drafter, TextDraft
from pipeline.answer.llm import Message
from tests.fakes import FakeSynthesizer


def test_lru_cache_evicts_least_recently_used_past_the_entry_bound() -> None:
    cache: LruCache[str, str] = LruCache(2, 1000, len)
    cache.put("a", "1")
    cache.put("b", "2")
    assert cache.get("a") == "1"  # a is now the most recent
    cache.put("c", "3")
    assert cache.get("b") is None and cache.get("a") == "1" and cache.get("c") == "3"
    assert cache.stats.entries == 2


def test_lru_cache_keeps_total_size_under_the_byte_bound() -> None:
    cache: LruCache[int, bytes] = LruCache(100, 10, len)
    for key in range(5):
        cache.put(key, b"abcd")
    assert cache.stats.bytes <= 10 and cache.stats.entries == 2
    cache.put(99, b"x" * 11)  # larger than the whole cache: not stored
    assert cache.get(99) is None


def test_cache_hit_rate_counts_hits_and_misses() -> None:
    cache: LruCache[str, str] = LruCache(4, 100, len)
    cache.put("k", "v")
    cache.get("k"), cache.get("k"), cache.get("nope")
    assert (cache.stats.hits, cache.stats.misses) == (2, 1)
    assert cache.stats.hit_rate == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    "changed",
    ["model", "system_prompt", "history", "transcript"],
)
def test_reply_cache_key_changes_with_everything_that_changes_the_answer(changed: str) -> None:
    base = {"model_id": "m", "system_prompt": "s", "history": [Message("user", "hi")],
            "transcript": "what time is it"}
    other = dict(base)
    other[{"model": "model_id"}.get(changed, changed)] = (
        [Message("user", "hello")] if changed == "history" else "different"
    )
    assert ReplyCache.key(**base) != ReplyCache.key(**other)  # type: ignore[arg-type]


def test_reply_cache_key_ignores_case_and_punctuation_of_the_transcript() -> None:
    assert ReplyCache.key("m", "s", [], "What time is it?") == ReplyCache.key(
        "m", "s", [], "what time is it"
    )


def test_reply_cache_clear_forgets_everything() -> None:
    cache = ReplyCache()
    cache.put("k", "reply")
    cache.clear()
    assert cache.get("k") is None and cache.stats.entries == 0


def test_tts_cache_replays_a_spoken_clause_without_synthesizing_again() -> None:
    inner = FakeSynthesizer()
    cached = CachedSynthesizer(inner)
    first = list(cached.synthesize("hello there"))
    second = list(cached.synthesize("hello  there"))
    assert len(inner.texts) == 1
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
    assert (cached.stats.hits, cached.stats.misses) == (1, 1)


def test_tts_cache_keys_on_a_tuned_voices_options() -> None:
    """A voice with `options` (pipeline.answer.tts.Tuned) speaks a clause anew under other options
    (another pace is other audio), and replays it under the same ones."""
    inner = FakeSynthesizer()
    inner.options = "pace 1.0"  # type: ignore[attr-defined]
    cached = CachedSynthesizer(inner)
    list(cached.synthesize("Hello there."))
    list(cached.synthesize("Hello there."))
    inner.options = "pace 1.2"  # type: ignore[attr-defined]
    list(cached.synthesize("Hello there."))
    assert inner.texts == ["Hello there.", "Hello there."]


def test_tts_cache_does_not_keep_a_clause_cut_short() -> None:
    inner = FakeSynthesizer()
    cached = CachedSynthesizer(inner)
    stream = cached.synthesize("one two three")
    next(stream)
    stream.close()  # barge-in: only part of the audio was made
    list(cached.synthesize("one two three"))
    assert len(inner.texts) == 2


def test_tts_cache_is_bounded_in_bytes() -> None:
    cached = CachedSynthesizer(FakeSynthesizer(), max_bytes=20_000)
    for word in ("alpha", "bravo", "charlie", "delta"):
        list(cached.synthesize(word))  # 100 ms = 3,200 bytes each
    list(cached.synthesize("a b c d e f g h"))
    assert cached.stats.bytes <= 20_000


def test_text_draft_proposes_the_continuation_while_output_follows_it() -> None:
    draft = TextDraft("cached", [5, 6, 7, 8, 9], max_tokens=2)
    assert list(draft.propose(np.array([5, 6], np.intc), np.array([], np.intc))) == [7, 8]
    assert len(draft.propose(np.array([5, 1], np.intc), np.array([], np.intc))) == 0
    assert len(draft.propose(np.array([5, 6, 7, 8, 9], np.intc), np.array([], np.intc))) == 0


def test_drafter_counts_accepted_tokens_against_what_was_verified() -> None:
    drafter = Drafter()
    drafter.start(prompt_len=3, sources=[TextDraft("cached", [10, 11, 12, 13], max_tokens=4)])
    prompt = [1, 2, 3]
    proposal = drafter(np.array([*prompt, 10], np.intc))
    assert list(proposal) == [11, 12, 13]
    # The model agreed with 11 and 12, then chose 99 instead of 13.
    drafter.finish(np.array([*prompt, 10, 11, 12, 99], np.intc))
    assert (drafter.stats.proposed, drafter.stats.accepted) == (3, 2)


def test_drafter_calls_back_once_before_its_first_proposal_only() -> None:
    """The responder switches on the logits a draft's verification needs only once a draft
    is proposed: a prompt with nothing to verify is read without them."""
    calls: list[int] = []
    drafter = Drafter()
    drafter.start(prompt_len=1, sources=[TextDraft("cached", [10, 11, 12], max_tokens=1)],
                  on_first_proposal=lambda: calls.append(1))
    assert len(drafter(np.array([1, 99], np.intc))) == 0  # output left the draft: no call
    assert calls == []
    drafter.start(prompt_len=1, sources=[TextDraft("cached", [10, 11, 12], max_tokens=1)],
                  on_first_proposal=lambda: calls.append(2))
    assert list(drafter(np.array([1, 10], np.intc))) == [11]
    assert list(drafter(np.array([1, 10, 11], np.intc))) == [12]
    assert calls == [2]


class _Vocab:
    def __init__(self, n_vocab: int, eos: int, shift: int = 0) -> None:
        self._n, self._eos, self._shift = n_vocab, eos, shift

    def n_vocab(self) -> int:
        return self._n

    def token_eos(self) -> int:
        return self._eos

    def tokenize(self, text: bytes, special: bool = False) -> list[int]:
        return [b + self._shift for b in text]


def test_a_draft_model_must_mean_the_same_by_every_token() -> None:
    from models.drafts import same_vocabulary

    target = _Vocab(49152, 2)
    assert same_vocabulary(target, _Vocab(49152, 2))  # type: ignore[arg-type]
    assert not same_vocabulary(target, _Vocab(32000, 2))  # type: ignore[arg-type]
    assert not same_vocabulary(target, _Vocab(49152, 0))  # type: ignore[arg-type]
    assert not same_vocabulary(target, _Vocab(49152, 2, shift=1))  # type: ignore[arg-type]
