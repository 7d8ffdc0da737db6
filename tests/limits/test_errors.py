from __future__ import annotations

import math
import pickle

import pytest

from rampart.core.errors import InfrastructureError
from rampart.limits import RateLimitedError


class TestRateLimitedError:
    def test_is_transient_infrastructure(self) -> None:
        """A rate limit is an infrastructure failure that waiting can fix."""
        error = RateLimitedError("slow down", retry_after=1.5)
        assert isinstance(error, InfrastructureError)
        assert error.transient is True
        assert error.retry_after == 1.5
        assert str(error) == "slow down"

    def test_retry_after_defaults_to_none(self) -> None:
        """An agent that gives no Retry-After leaves it None."""
        assert RateLimitedError("429").retry_after is None

    def test_integer_retry_after_becomes_float(self) -> None:
        """Whole seconds (as in an HTTP header) are accepted."""
        value = RateLimitedError("429", retry_after=2).retry_after
        assert value == 2.0
        assert isinstance(value, float)

    @pytest.mark.parametrize("retry_after", [None, 0.0, 0.25, 30])
    def test_pickle_round_trip(self, retry_after: float | None) -> None:
        """The error crosses process boundaries with its message and retry_after."""
        error = RateLimitedError("slow down", retry_after=retry_after)
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is RateLimitedError
        assert copy.args == ("slow down",)
        assert copy.retry_after == error.retry_after
        assert copy.transient is True

    @pytest.mark.parametrize("bad", [-1, -0.001, math.inf, math.nan])
    def test_rejects_bad_retry_after_values(self, bad: float) -> None:
        """retry_after must be a finite number of seconds >= 0."""
        with pytest.raises(ValueError, match="retry_after"):
            RateLimitedError("x", retry_after=bad)

    @pytest.mark.parametrize("bad", [True, "1", [1]])
    def test_rejects_non_numbers(self, bad: object) -> None:
        """Bools and strings are not durations."""
        with pytest.raises(TypeError, match="retry_after"):
            RateLimitedError("x", retry_after=bad)  # type: ignore[arg-type]

    def test_repr_shows_retry_after(self) -> None:
        """The repr carries the pause the agent asked for."""
        assert (
            repr(RateLimitedError("x", retry_after=3)) == "RateLimitedError('x', retry_after=3.0)"
        )
