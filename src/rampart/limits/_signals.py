"""The channel adapters use to tell the limiter what an agent said about its rate limit.

Inside a limited ``send_async`` the limiter listens on rampart's one "slow down"
channel (``rampart._pacing.slowdown``); an adapter reports what it read with
``report_rate_limit_headers(headers)`` (or ``report_rate_limit(signal)``) after a
successful answer, and attaches the signal of a refusal to the ``RateLimitedError`` it
raises (``signal=``). Outside a limiter a report is a no-op, so an adapter can always
report. The channel is a context variable, inherited by child tasks, so reporting from
a task the adapter starts inside ``send_async`` works too. Reading the headers is the
pure ``rampart.limits._policy._headers`` (re-exported here).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING

from rampart._pacing import slowdown
from rampart.limits._policy._headers import (
    HEADROOM_MIN_LIMIT,
    Headers,
    Quota,
    RateLimitSignal,
    parse_duration,
    parse_rate_limit_headers,
    parse_retry_after,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = [
    "HEADROOM_MIN_LIMIT",
    "Quota",
    "RateLimitSignal",
    "collect_signals",
    "parse_duration",
    "parse_rate_limit_headers",
    "parse_retry_after",
    "report_rate_limit",
    "report_rate_limit_headers",
]


def report_rate_limit(signal: RateLimitSignal | None) -> None:
    """Pass ``signal`` to the limiter whose ``send_async`` is running, if any."""
    if signal:
        slowdown.report(slowdown.SlowDown(signal=signal))


def report_rate_limit_headers(headers: Headers) -> None:
    """Read ``headers`` and report what they say about the rate limit (see the module
    docstring). Cheap when nobody listens: nothing is parsed."""
    if not slowdown.listening():
        return
    report_rate_limit(parse_rate_limit_headers(headers))


@contextmanager
def collect_signals(listener: Callable[[RateLimitSignal], None]) -> Iterator[None]:
    """Within the block, reports of what the agent said go to ``listener`` and then to
    any outer listener (a limiter wrapped in another limiter: both hear the agent)."""

    def hear(event: slowdown.SlowDown) -> None:
        if isinstance(event.signal, RateLimitSignal):
            listener(event.signal)

    with slowdown.listen(hear):
        yield
