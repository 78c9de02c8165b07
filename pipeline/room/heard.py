"""The microphone frames the echo guard remembers (pipeline.room.echo): when each arrived,
its bands and level, and whether the gate took it as the user."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

import numpy as np

from pipeline.audio import dbfs
from pipeline.room.bands import Bands
from pipeline.room.delay import HeardFrames


class HeardLog:
    """The last `size` heard frames; the newest `pending` may still turn out to be the
    user (the gate confirms a user 60-140 ms into their first word)."""

    def __init__(self, size: int = 150, pending: int = 8) -> None:
        self.pending = pending
        self._t: deque[float] = deque(maxlen=size)
        self._db: deque[float] = deque(maxlen=size)
        self._bands: deque[Bands] = deque(maxlen=size)
        self._user: deque[bool] = deque(maxlen=size)

    def __len__(self) -> int:
        return len(self._t)

    def add(self, t: float, near: Bands) -> None:
        self._t.append(t)
        self._db.append(dbfs(float(near.sum())))
        self._bands.append(near)
        self._user.append(False)

    def mark_user(self) -> bool:
        """The gate took the newest frame as the user. True when it is their onset (the
        frame before was not): the `pending` frames before it were the user too."""
        if not self._user:
            return False
        onset = len(self._user) > 1 and not self._user[-2]
        if onset:
            for i in range(1, min(self.pending, len(self._user) - 1) + 1):
                self._user[-1 - i] = True
        self._user[-1] = True
        return onset

    def settled(self) -> HeardFrames:
        """The frames no longer pending, for a delay estimate."""
        n = len(self._t) - self.pending
        return HeardFrames(np.fromiter(self._t, float)[:n], np.fromiter(self._db, float)[:n],
                           np.fromiter(self._user, bool, count=len(self._user))[:n])

    def settled_ours(self) -> Iterator[tuple[float, Bands]]:
        """The frames no longer pending that the gate did not take as the user."""
        n = max(0, len(self._t) - self.pending)
        for t, bands, user in zip(list(self._t)[:n], list(self._bands)[:n],
                                  list(self._user)[:n], strict=True):
            if not user:
                yield t, bands
