from __future__ import annotations

import random

import pytest

from rampart.limits._policy._backoff import backoff_delay


class _Extreme(random.Random):
    """A Random whose ``uniform`` always returns the top of the range."""

    def uniform(self, a: float, b: float) -> float:
        return b


class TestBackoffDelay:
    @pytest.mark.parametrize("retry", [0, 1, 2, 5, 10])
    def test_full_jitter_stays_in_the_exponential_range(self, retry: int) -> None:
        """Delays are drawn from [0, min(cap, base * 2**retry)]."""
        rng = random.Random(retry)
        ceiling = min(30.0, 0.5 * 2**retry)
        delays = [backoff_delay(retry, rng=rng) for _ in range(200)]
        assert all(0.0 <= delay <= ceiling for delay in delays)
        assert max(delays) > ceiling / 2  # jitter spans the range, not a point

    def test_range_doubles_until_the_cap(self) -> None:
        """The ceiling doubles per retry and then stays at the cap."""
        rng = _Extreme()
        ceilings = [backoff_delay(r, rng=rng, base=1.0, cap=10.0) for r in range(6)]
        assert ceilings == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]

    def test_never_sooner_than_retry_after(self) -> None:
        """A Retry-After longer than the jitter wins."""
        rng = random.Random(0)
        assert all(backoff_delay(0, rng=rng, retry_after=7.0) == 7.0 for _ in range(50))

    def test_jitter_longer_than_retry_after_is_kept(self) -> None:
        """retry_after is a floor, not a replacement."""
        assert backoff_delay(3, rng=_Extreme(), retry_after=0.1) == 4.0

    def test_huge_retry_counts_do_not_overflow(self) -> None:
        """A very large retry number still yields the cap."""
        assert backoff_delay(10_000, rng=_Extreme()) == 30.0

    def test_same_seed_same_schedule(self) -> None:
        """An injected rng makes the schedule reproducible."""
        first = [backoff_delay(r, rng=random.Random(5)) for r in range(5)]
        second = [backoff_delay(r, rng=random.Random(5)) for r in range(5)]
        assert first == second
