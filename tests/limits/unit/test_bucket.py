from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rampart.limits._policy._bucket import BucketState, reserve
from tests.limits._shared import assert_within_budget


def _grants(arrivals: list[float], *, rate: float, burst: int) -> list[float]:
    state: BucketState | None = None
    grants = []
    for now in arrivals:
        state, wait = reserve(state, now=now, rate=rate, burst=burst)
        grants.append(now + wait)
    return grants


class TestReserve:
    def test_fresh_bucket_grants_burst_at_once(self) -> None:
        """A new bucket is full: the first ``burst`` requests need not wait."""
        waits = []
        state = None
        for _ in range(4):
            state, wait = reserve(state, now=0.0, rate=10.0, burst=3)
            waits.append(wait)
        assert waits == [0.0, 0.0, 0.0, pytest.approx(0.1)]

    def test_queued_reservations_are_spaced_by_one_over_rate(self) -> None:
        """Once empty, each further reservation is due 1/rate after the previous one."""
        grants = _grants([0.0] * 6, rate=4.0, burst=1)
        assert grants == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0, 1.25])

    def test_refill_is_capped_at_burst(self) -> None:
        """A long idle period refills at most ``burst`` tokens."""
        state, _ = reserve(None, now=0.0, rate=10.0, burst=2)
        state, wait = reserve(state, now=100.0, rate=10.0, burst=2)
        assert wait == 0.0
        assert state.tokens == 1.0

    def test_debt_is_repaid_by_time(self) -> None:
        """A negative balance refills at ``rate``: waiting long enough needs no more wait."""
        state, _ = reserve(None, now=0.0, rate=2.0, burst=1)
        state, wait = reserve(state, now=0.0, rate=2.0, burst=1)
        assert wait == pytest.approx(0.5)
        state, wait = reserve(state, now=1.0, rate=2.0, burst=1)
        assert wait == 0.0

    def test_clock_stepping_back_neither_refills_nor_stalls(self) -> None:
        """State stamped by a clock far ahead restamps instead of waiting for that clock."""
        state = BucketState(tokens=0.0, stamp=1_000_000.0)
        state, wait = reserve(state, now=5.0, rate=10.0, burst=1)
        assert wait == pytest.approx(0.1)
        assert state.stamp == 5.0
        state, wait = reserve(state, now=5.2, rate=10.0, burst=1)
        assert wait == 0.0

    @settings(max_examples=150, deadline=None)
    @given(
        gaps=st.lists(st.floats(min_value=0.0, max_value=0.5), min_size=1, max_size=40),
        rate=st.floats(min_value=0.5, max_value=50.0),
        burst=st.integers(min_value=1, max_value=8),
    )
    def test_grants_never_exceed_the_budget(
        self, gaps: list[float], rate: float, burst: int
    ) -> None:
        """For any arrival pattern, grants in any interval stay within burst + rate * length."""
        arrivals = []
        now = 0.0
        for gap in gaps:
            now += gap
            arrivals.append(now)
        grants = _grants(arrivals, rate=rate, burst=burst)
        assert all(grant >= arrival for grant, arrival in zip(grants, arrivals, strict=True))
        assert grants == sorted(grants)
        assert_within_budget(grants, rate=rate, burst=burst)
