"""``RUN_CLOCK``: the running event loop's clock, continued from one event loop to the next.

A limiter is one per name per run, and a pytest run gives most tests an event loop of
their own. Their clocks do not agree: trio starts each run's clock at a random origin
(thousands of seconds apart), and a virtual ``MockClock`` starts at 0. A limiter's
state (its pause, its send schedule, a learned rate's stamps in a ``MemoryBackend``)
measured on one loop's clock would be read on the next loop's as hours ahead or behind.

So the limiters and the default ``MemoryBackend`` read ``RUN_CLOCK``: within one event
loop it is that loop's clock plus a fixed offset (a virtual clock still drives it);
when another event loop starts using it (``sync``), the offset changes so that the
time goes on from the last reading plus the real time elapsed since. Time never runs
backwards, and nothing measured before is misread.

``sync`` is called once per request (by the limiter, and by a ``MemoryBackend`` on its
clock); reading the clock is one loop-clock read and an addition. One event loop at a
time: see ``Limiter`` for the check that a limiter is not used by two at once.
"""

from __future__ import annotations

import threading
import time
import weakref

import anyio
import anyio.lowlevel

__all__ = ["RUN_CLOCK", "RunClock"]


class RunClock:
    """Seconds on the running event loop's clock, continued across event loops (see the
    module docstring)."""

    __slots__ = ("_latest", "_lock", "_loop", "_mark", "_mark_at", "_offset")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: weakref.ref[object] | None = None
        self._offset = 0.0
        self._mark = 0.0  # the last reading ``sync`` made ...
        self._mark_at = 0.0  # ... and ``time.monotonic()`` then
        self._latest = 0.0  # the last reading of all

    def __call__(self) -> float:
        """Now (the event loop this clock was last synced on must be running)."""
        now = self._latest = anyio.current_time() + self._offset
        return now

    def sync(self) -> float:
        """Now, after following a change of event loop (see the module docstring)."""
        loop = anyio.lowlevel.current_token().native_token
        known = self._loop
        if known is None or known() is not loop:
            with self._lock:
                known = self._loop
                if known is None or known() is not loop:
                    here = anyio.current_time()
                    if known is not None:  # the first loop keeps its own clock
                        elapsed = max(0.0, time.monotonic() - self._mark_at)
                        self._offset = max(self._latest, self._mark + elapsed) - here
                    self._loop = weakref.ref(loop)
        now = self._latest = anyio.current_time() + self._offset
        self._mark, self._mark_at = now, time.monotonic()
        return now


RUN_CLOCK = RunClock()
"""The process's one ``RunClock``."""
