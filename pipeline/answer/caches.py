"""Bounded caches with hit rates: replies (used only as drafts) and TTS audio.

Keys hold everything that changes the value — model, system prompt, voice, options,
conversation state — so a change of any of them misses; `clear()` drops everything when a
setting changes at run time. Both bounds (entries and bytes) are enforced, least recently
used first.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Generic, TypeVar

import numpy as np

from pipeline.answer.llm import Message
from pipeline.answer.tts import Synthesizer, Tuned
from pipeline.compute.stats import CacheStats
from pipeline.events import Pcm

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """Thread-safe LRU bounded by entry count and total size in bytes."""

    def __init__(self, max_entries: int, max_bytes: int, size: Callable[[V], int],
                 stats: CacheStats | None = None) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._size = size
        self.stats = stats or CacheStats()
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is None:
                self.stats.misses += 1
                return None
            self._items.move_to_end(key)
            self.stats.hits += 1
            return value

    def put(self, key: K, value: V) -> None:
        size = self._size(value)
        if size > self.max_bytes:
            return
        with self._lock:
            if key in self._items:
                self.stats.bytes -= self._size(self._items.pop(key))
            self._items[key] = value
            self.stats.bytes += size
            while len(self._items) > self.max_entries or self.stats.bytes > self.max_bytes:
                _, old = self._items.popitem(last=False)
                self.stats.bytes -= self._size(old)
            self.stats.entries = len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.stats.entries = 0
            self.stats.bytes = 0


def _normalise(text: str) -> str:
    return " ".join("".join(c for c in text.lower() if c.isalnum() or c.isspace()).split())


class ReplyCache:
    """Verified replies by (model, system prompt, history, transcript) — served as drafts."""

    def __init__(self, max_entries: int = 512, max_bytes: int = 1 << 20,
                 stats: CacheStats | None = None) -> None:
        self._cache: LruCache[str, str] = LruCache(
            max_entries, max_bytes, lambda text: len(text.encode()), stats
        )
        self.stats = self._cache.stats

    @staticmethod
    def key(model_id: str, system_prompt: str, history: Sequence[Message], transcript: str) -> str:
        digest = hashlib.sha256()
        for part in (model_id, system_prompt, *(f"{m.role}:{m.content}" for m in history),
                     _normalise(transcript)):
            digest.update(part.encode())
            digest.update(b"\0")
        return digest.hexdigest()

    def get(self, key: str) -> str | None:
        return self._cache.get(key)

    def put(self, key: str, reply: str) -> None:
        if reply.strip():
            self._cache.put(key, reply)

    def clear(self) -> None:
        self._cache.clear()


class CachedSynthesizer:
    """A Synthesizer that replays audio for a clause it has already spoken (same voice,
    same options, same text)."""

    def __init__(self, inner: Synthesizer, max_entries: int = 256, max_bytes: int = 16 << 20,
                 stats: CacheStats | None = None) -> None:
        self.inner = inner
        self.voice_id = inner.voice_id
        self._cache: LruCache[tuple[str, str, str], tuple[Pcm, ...]] = LruCache(
            max_entries, max_bytes, lambda chunks: sum(c.nbytes for c in chunks), stats
        )
        self.stats = self._cache.stats

    def synthesize(self, text: str) -> Iterator[Pcm]:
        options = self.inner.options if isinstance(self.inner, Tuned) else None
        key = (self.voice_id, repr(options), " ".join(text.split()))
        cached = self._cache.get(key)
        if cached is not None:
            yield from (chunk.copy() for chunk in cached)
            return
        chunks: list[Pcm] = []
        for chunk in self.inner.synthesize(text):
            chunks.append(chunk)
            yield chunk
        if chunks:
            self._cache.put(key, tuple(np.asarray(c) for c in chunks))

    def clear(self) -> None:
        self._cache.clear()
