"""The channel adapters report rate-limit signals on (a context variable a limiter
listens on; ``collect_signals`` is private): listeners nest and child tasks reach them."""

from __future__ import annotations

import anyio
import pytest

from rampart.limits import (
    RateLimitSignal,
    report_rate_limit,
    report_rate_limit_headers,
)
from rampart.limits._signals import collect_signals


class TestChannel:
    def test_reports_reach_the_listener_and_the_outer_one(self) -> None:
        """A limiter inside a limiter: both hear what the adapter reports."""
        outer: list[RateLimitSignal] = []
        inner: list[RateLimitSignal] = []
        with collect_signals(outer.append), collect_signals(inner.append):
            report_rate_limit_headers({"x-ratelimit-limit-requests": "60"})
            report_rate_limit(None)
        assert len(inner) == len(outer) == 1
        assert inner[0].quotas[0].limit == 60

    def test_without_a_listener_a_report_is_a_no_op(self) -> None:
        report_rate_limit_headers({"x-ratelimit-limit-requests": "60"})
        report_rate_limit(RateLimitSignal(retry_after=1.0))

    @pytest.mark.anyio
    async def test_child_tasks_report_to_the_listener(self) -> None:
        heard: list[RateLimitSignal] = []

        async def child() -> None:
            report_rate_limit(RateLimitSignal(retry_after=1.0))

        with collect_signals(heard.append):
            async with anyio.create_task_group() as group:
                group.start_soon(child)
        assert heard == [RateLimitSignal(retry_after=1.0)]
