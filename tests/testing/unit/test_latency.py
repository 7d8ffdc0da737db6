from __future__ import annotations

import math
import random

import pytest

from rampart.testing import Latency
from rampart.testing._latency import as_latency


class TestLatency:
    def test_fixed(self) -> None:
        """A fixed latency needs no randomness and always returns its value."""
        latency = Latency.fixed(0.25)
        assert latency.is_fixed
        assert latency.sample(None) == 0.25
        assert latency == Latency.fixed(0.25) != Latency.fixed(0.5)
        assert repr(latency) == "Latency.fixed(0.25)"

    def test_uniform_is_seeded_and_bounded(self) -> None:
        """Uniform samples stay in range and repeat for the same rng seed."""
        latency = Latency.uniform(0.1, 0.2)
        first = [latency.sample(random.Random(7)) for _ in range(3)]
        assert first == [latency.sample(random.Random(7)) for _ in range(3)]
        rng = random.Random(1)
        samples = [latency.sample(rng) for _ in range(200)]
        assert all(0.1 <= value <= 0.2 for value in samples)
        assert len(set(samples)) > 100
        assert not latency.is_fixed

    def test_exponential_mean(self) -> None:
        """Exponential samples are non-negative with about the requested mean."""
        rng = random.Random(3)
        samples = [Latency.exponential(0.05).sample(rng) for _ in range(4000)]
        assert min(samples) >= 0
        assert math.isclose(sum(samples) / len(samples), 0.05, rel_tol=0.1)
        assert Latency.exponential(0).is_fixed

    def test_callable_receives_rng(self) -> None:
        """A sampler gets the session's rng."""
        seen: list[random.Random] = []

        def sampler(rng: random.Random) -> float:
            seen.append(rng)
            return 0.5

        rng = random.Random(0)
        assert Latency.from_callable(sampler).sample(rng) == 0.5
        assert seen == [rng]

    def test_sampling_needs_rng(self) -> None:
        """A random latency cannot be sampled without an rng."""
        with pytest.raises(ValueError, match=r"needs a random\.Random"):
            Latency.uniform(0, 1).sample(None)

    @pytest.mark.parametrize("bad", [-0.1, math.inf, math.nan, "1", True, None])
    def test_bad_samples_are_rejected(self, bad: object) -> None:
        """A sampler returning something other than non-negative finite seconds fails."""
        latency = Latency.from_callable(lambda rng: bad)  # type: ignore[arg-type,return-value]
        with pytest.raises(ValueError, match="latency"):
            latency.sample(random.Random(0))

    @pytest.mark.parametrize(
        ("factory", "error", "match"),
        [
            (lambda: Latency.fixed(-1), ValueError, "seconds"),
            (lambda: Latency.uniform(0.2, 0.1), ValueError, "high"),
            (lambda: Latency.uniform(-1, 1), ValueError, "low"),
            (lambda: Latency.exponential(math.inf), ValueError, "mean"),
            (lambda: Latency.from_callable(3), TypeError, "sampler"),  # type: ignore[arg-type]
        ],
    )
    def test_bad_constructors(self, factory: object, error: type[Exception], match: str) -> None:
        """Each constructor names the argument it rejects."""
        with pytest.raises(error, match=match):
            factory()  # type: ignore[operator]

    def test_coercion(self) -> None:
        """Numbers, Latency objects and callables are accepted; anything else is not."""
        assert as_latency("X", 1) == Latency.fixed(1.0)
        uniform = Latency.uniform(0, 1)
        assert as_latency("X", uniform) is uniform
        assert not as_latency("X", lambda rng: 0.0).is_fixed
        with pytest.raises(TypeError, match="X: latency must be"):
            as_latency("X", "fast")
        with pytest.raises(ValueError, match="X: latency"):
            as_latency("X", -2)
