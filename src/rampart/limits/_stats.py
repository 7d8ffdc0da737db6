"""``LimiterStatistics``: a frozen snapshot of what one limiter has done."""

from __future__ import annotations

import attrs

from rampart.limits._shared_rate import LearnedRateStatistics

__all__ = ["LimiterStatistics"]


@attrs.frozen(kw_only=True)
class LimiterStatistics:
    """What a limiter has done so far (``LimitedAdapter.statistics()``).

    Counters are per process. ``requests`` counts ``send_async`` calls; every attempt
    after a request's first is a ``retry``. ``rate_limited`` and
    ``transient_failures`` count failed attempts by kind; ``failed`` counts requests
    whose error propagated. ``in_flight`` / ``peak_in_flight`` count attempts inside
    the wrapped ``send_async``. ``current_window`` is the number of attempts allowed
    in flight (``None``: unbounded) and ``window_cap`` its upper bound now (with
    ``adaptive=True`` and no ``max_concurrency``, the learned rate times the latency,
    Little's law; ``None``: unbounded); ``wait_seconds`` is the total time requests spent
    waiting for a slot, a ``Retry-After`` pause, a token or a backoff.
    ``rate_limit_episodes`` counts the cuts of an adaptive window. ``backend``
    describes where the token bucket lives (``"none"`` without a bucket).
    ``learned`` is the learned rate's state (``adaptive=True``; ``None`` otherwise), as
    this process last saw it: with a shared backend it is the rate every participant
    learned together. ``retrying`` says, in one redacted line, why requests are backing
    off right now (``None``: none is).
    """

    name: str
    backend: str
    adaptive: bool
    max_concurrency: int | None
    rate: float | None
    burst: int | None
    in_flight: int
    peak_in_flight: int
    requests: int
    retries: int
    rate_limited: int
    transient_failures: int
    failed: int
    current_window: int | None
    rate_limit_episodes: int
    wait_seconds: float
    learned: LearnedRateStatistics | None = None
    retrying: str | None = None
    window_cap: int | None = None

    def as_dict(self) -> dict[str, object]:
        """The snapshot as a JSON-ready dict (for report metadata)."""
        return attrs.asdict(self)
