"""``RateLimitedError``: the agent said "slow down"."""

from __future__ import annotations

from rampart._checks import check_optional_instance, check_optional_seconds
from rampart.core.errors import InfrastructureError
from rampart.limits._policy._headers import RateLimitSignal

__all__ = ["RateLimitedError"]


class RateLimitedError(InfrastructureError):
    """The agent refused a request because of a rate limit (HTTP 429, or a 503 saying so).

    ``retry_after`` is how many seconds the agent asked the caller to wait (``None``:
    it did not say). A limiter retries these errors no sooner than ``retry_after``,
    slows down (its learned rate, or its adaptive window), and pauses new requests for
    that long. ``signal`` is everything else the refusal said about the agent's limit
    (its rate-limit headers, ``parse_rate_limit_headers``), which a learned rate uses.
    The error is always ``transient``: waiting is expected to help. It pickles with
    its ``retry_after`` and ``signal`` (the base class's ``__reduce__`` carries the
    instance state).
    """

    rate_limited = True
    """Marks a refusal for the agent's rate on rampart's "slow down" channel
    (``rampart._slowdown.is_rate_limit_refusal``)."""

    def __init__(
        self,
        message: str = "",
        *,
        retry_after: float | None = None,
        signal: RateLimitSignal | None = None,
    ) -> None:
        checked = check_optional_seconds("RateLimitedError", "retry_after", retry_after)
        check_optional_instance(
            "RateLimitedError", "signal", signal, RateLimitSignal, expected="a RateLimitSignal"
        )
        super().__init__(message, transient=True)
        self.retry_after = checked
        self.signal = signal

    def __repr__(self) -> str:
        return f"RateLimitedError({str(self)!r}, retry_after={self.retry_after!r})"
