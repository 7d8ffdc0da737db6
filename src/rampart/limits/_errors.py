"""``RateLimitedError``: the agent said "slow down"; and ``as_refusal``, which reads the
same news from a foreign client's error."""

from __future__ import annotations

from rampart._checks import check_optional_instance, check_optional_seconds
from rampart.core._internal import FailureKind, classify_failure
from rampart.core.errors import InfrastructureError
from rampart.limits._policy._headers import (
    RateLimitSignal,
    parse_rate_limit_headers,
    parse_retry_after,
)

__all__ = ["RateLimitedError", "as_refusal"]


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
    """Marks a refusal for the agent's rate to ``rampart.core._failures``, which reads
    failures for the limiters and the error boundary without importing this layer."""

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


def as_refusal(error: BaseException) -> RateLimitedError | None:
    """The refusal ``error`` stands for, as a ``RateLimitedError``; ``None`` when it is
    none (``rampart.core._failures.classify_failure`` says which errors are).

    rampart's own ``RateLimitedError`` (raised, or wrapped by the agent's code) is
    returned as it is. A foreign one (an SDK's ``RateLimitError``, an
    ``HTTPStatusError`` with 429, wrapped or not) is described by a new, unraised
    ``RateLimitedError`` with the ``retry_after`` and ``signal`` its response's headers
    give (``retry-after-ms`` / ``Retry-After``, ``x-ratelimit-*``, ``RateLimit``), so a
    limiter treats both alike.
    """
    failure = classify_failure(error)
    if failure.kind is not FailureKind.RATE_LIMITED:
        return None
    if isinstance(failure.source, RateLimitedError):
        return failure.source
    headers = failure.headers
    return RateLimitedError(
        failure.describe(),
        retry_after=parse_retry_after(headers) if headers else None,
        signal=parse_rate_limit_headers(headers) if headers else None,
    )
