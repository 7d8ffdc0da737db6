"""Retry delays: exponential backoff with full jitter, never sooner than ``Retry-After``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import random

__all__ = ["DEFAULT_BACKOFF_BASE", "DEFAULT_BACKOFF_CAP", "backoff_delay"]

DEFAULT_BACKOFF_BASE = 0.5
"""Seconds: the ceiling of the first retry's jitter range."""

DEFAULT_BACKOFF_CAP = 30.0
"""Seconds: the largest jitter range, however many retries came before."""


def backoff_delay(
    retry: int,
    *,
    rng: random.Random,
    retry_after: float | None = None,
    base: float = DEFAULT_BACKOFF_BASE,
    cap: float = DEFAULT_BACKOFF_CAP,
) -> float:
    """Seconds to wait before retry number ``retry`` (0 for the first retry).

    Full jitter: uniform in ``[0, min(cap, base * 2**retry)]``, so callers that failed
    together spread out instead of returning together. The result is raised to
    ``retry_after`` when the agent asked for a longer pause.
    """
    ceiling = min(cap, base * 2.0 ** min(retry, 64))
    delay = rng.uniform(0.0, ceiling)
    if retry_after is not None and retry_after > delay:
        return retry_after
    return delay
