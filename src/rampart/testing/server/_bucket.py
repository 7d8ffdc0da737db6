"""The test server's token bucket: ``rate`` tokens a second, at most ``burst`` stored."""

from __future__ import annotations

__all__ = ["TokenBucket"]


class TokenBucket:
    """A classic token bucket, driven by the caller's clock (pure and synchronous).

    It starts full. ``take(now)`` removes one token and returns ``0.0``, or, when the
    bucket holds less than one token, leaves it unchanged and returns how many seconds
    until one will be there. A refused request costs nothing.
    """

    __slots__ = ("_burst", "_rate", "_stamp", "_tokens")

    def __init__(self, *, rate: float, burst: int, now: float) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._tokens = float(burst)
        self._stamp = now

    @property
    def rate(self) -> float:
        return self._rate

    @property
    def burst(self) -> int:
        return int(self._burst)

    def tokens(self, now: float) -> float:
        """Tokens available at ``now`` (refilled, capped at ``burst``)."""
        self._refill(now)
        return self._tokens

    def _refill(self, now: float) -> None:
        if now > self._stamp:
            self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._rate)
            self._stamp = now

    def take(self, now: float) -> float:
        """Take one token (``0.0``) or return the seconds until one is available."""
        self._refill(now)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self._rate
