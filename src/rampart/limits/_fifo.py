"""``FifoGate``: tasks wait, in arrival order, for places a policy hands out.

The limiter has two such queues: concurrency slots (``LimiterCore`` decides whether a
slot is free) and, for a learned rate, places for booked and unsent tokens
(``booking_depth``). Both need the same three things: a free place is taken at once and
without a checkpoint (this is every request's path), waiters are served first come
first served, and a waiter cancelled just as its place was handed over gives it back.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["FifoGate"]


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

    def leave(self) -> None:
        self._give()
        self.wake()

    def wake(self) -> None:
        """Hand free places to waiters in arrival order (more may have become free)."""
        while self._waiters and self._take():
            self._waiters.popleft().set()
