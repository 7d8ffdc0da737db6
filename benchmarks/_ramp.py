"""How quickly a run reached the agent's rate: shared by the rate benchmarks."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

SHARE = 0.90
"""Time-to-rate is the time until the agent admitted this share of its rate ..."""

WINDOW = 0.25
"""... over a window of at least this many seconds (and at least ``WINDOW_REQUESTS``
requests at the rate), so a lucky pair of requests is no rate."""

WINDOW_REQUESTS = 10.0


def time_to_rate(admitted: Iterable[float], *, rate: float, start: float) -> float:
    """Seconds from ``start`` to the beginning of the first window in which the agent
    admitted at least ``SHARE`` of ``rate`` (``inf``: never)."""
    times = sorted(admitted)
    window = max(WINDOW, WINDOW_REQUESTS / rate)
    needed = math.ceil(SHARE * rate * window)
    for first, at in enumerate(times):
        last = first + needed - 1
        if last >= len(times):
            break
        if times[last] <= at + window:
            return max(0.0, at - start)
    return math.inf


def ideal_wall(n: int, *, rate: float, burst: int, latency: float) -> float:
    """The shortest a run of ``n`` single requests can take: the burst at once, then one
    every ``1 / rate``, the last answered ``latency`` later."""
    return max(0, n - burst) / rate + latency
