"""``FifoGate``: tasks wait, in arrival order, for places a policy hands out.

The limiter has three such queues: concurrency slots (``LimiterCore`` decides whether a
slot is free) and, for a learned rate, places for booked and unsent tokens
(``booking_depth``) and the one place at the head of the send turnstile (``Places``
counts those two). All need the same three things: a free place is taken at once and
without a checkpoint (this is every request's path), waiters are served first come
first served, and a waiter cancelled just as its place was handed over gives it back.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["FifoGate", "Places"]


class Places:
    """At most ``limit`` places taken at once; ``limit`` may change (a ``FifoGate``'s
    ``wake`` then hands out the new ones)."""

    __slots__ = ("limit", "taken")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.taken = 0

    def take(self) -> bool:
        if self.taken >= self.limit:
            return False
        self.taken += 1
        return True

    def give(self) -> None:
        self.taken -= 1


class FifoGate:
    """Places that ``take()`` hands out (``False``: none free) and ``give()`` takes
    back; ``enter`` waits for one in arrival order, ``leave`` returns it."""

    __slots__ = ("_give", "_take", "_waiters")

    def __init__(self, *, take: Callable[[], bool], give: Callable[[], None]) -> None:
        self._take = take
        self._give = give
        self._waiters: collections.deque[anyio.Event] = collections.deque()

    async def enter(self) -> None:
        if not self._waiters and self._take():
            return
        event = anyio.Event()
        self._waiters.append(event)
        try:
            await event.wait()
        except BaseException:
            if event.is_set():
                self.leave()  # handed over just as we were cancelled
            else:
                self._waiters.remove(event)
            raise

    @property
    def queued(self) -> int:
        """How many tasks wait for a place."""
        return len(self._waiters)

    def leave(self) -> None:
        self._give()
        self.wake()

    def wake(self) -> None:
        """Hand free places to waiters in arrival order (more may have become free)."""
        while self._waiters and self._take():
            self._waiters.popleft().set()
