from __future__ import annotations

from typing import Any

import pytest

from rampart.testing.server import ServerOptions, TokenBucket


class TestTokenBucket:
    def test_starts_full(self) -> None:
        """A fresh bucket admits burst requests at once, then refuses."""
        bucket = TokenBucket(rate=2.0, burst=3, now=0.0)
        assert [bucket.take(0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
        assert bucket.take(0.0) == pytest.approx(0.5)

    def test_refusal_costs_nothing(self) -> None:
        """Refused requests take no token, so the wait shrinks as time passes."""
        bucket = TokenBucket(rate=4.0, burst=1, now=0.0)
        assert bucket.take(0.0) == 0.0
        assert bucket.take(0.0) == pytest.approx(0.25)
        assert bucket.take(0.1) == pytest.approx(0.15)
        assert bucket.take(0.25) == 0.0

    def test_refills_at_rate_up_to_burst(self) -> None:
        """Tokens accrue at rate per second and never beyond burst."""
        bucket = TokenBucket(rate=10.0, burst=5, now=0.0)
        for _ in range(5):
            bucket.take(0.0)
        assert bucket.tokens(0.3) == pytest.approx(3.0)
        assert bucket.tokens(100.0) == 5.0

    def test_clock_going_backwards_is_ignored(self) -> None:
        """An earlier timestamp neither adds nor removes tokens."""
        bucket = TokenBucket(rate=1.0, burst=2, now=10.0)
        bucket.take(10.0)
        assert bucket.tokens(5.0) == pytest.approx(1.0)


class TestServerOptions:
    def test_defaults(self) -> None:
        """By default there is no rate limit, no latency and no fault."""
        options = ServerOptions()
        assert options.rate is None
        assert (options.burst, options.latency, options.error_rate, options.hang_rate) == (
            1,
            0.0,
            0.0,
            0.0,
        )
        assert options.error_statuses == (500, 503)

    @pytest.mark.parametrize(
        ("field", "value", "error"),
        [
            ("rate", 0, ValueError),
            ("rate", -1.0, ValueError),
            ("rate", float("inf"), ValueError),
            ("rate", "50", TypeError),
            ("burst", 0, ValueError),
            ("burst", 2.5, TypeError),
            ("burst", True, TypeError),
            ("latency", -0.1, ValueError),
            ("latency", float("nan"), ValueError),
            ("error_rate", 1.5, ValueError),
            ("hang_rate", -0.1, ValueError),
            ("error_statuses", (), ValueError),
            ("error_statuses", [500], TypeError),
            ("error_statuses", (404,), ValueError),
            ("seed", 1.0, TypeError),
            ("compliance", 2, ValueError),
            ("secret", "", ValueError),
            ("model", " ", ValueError),
            ("retry_after_ms", "yes", TypeError),
            ("rate_limit_headers", "yes", ValueError),
            ("rate_limit_headers", True, ValueError),
            ("max_conversations", 0, ValueError),
            ("max_body_bytes", -5, ValueError),
        ],
    )
    def test_bad_values_name_the_field(
        self, field: str, value: Any, error: type[Exception]
    ) -> None:
        """Every bad option is rejected with an error naming it."""
        with pytest.raises(error, match=rf"^ServerOptions: {field}(\[\d\])? must be "):
            ServerOptions(**{field: value})
