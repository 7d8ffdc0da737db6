"""``Latency``: how long a simulated agent takes per request, fixed or drawn at random."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from rampart._checks import check_callable, check_seconds, invalid

__all__ = ["Latency", "LatencySpec", "as_latency"]

Sampler = Callable[[random.Random], float]


class Latency:
    """A per-request delay: a fixed value or a distribution sampled from a session's rng.

    Build one with ``Latency.fixed``, ``Latency.uniform``, ``Latency.exponential`` or
    ``Latency.from_callable``. Samples are checked: a sampler that returns a negative or
    non-finite value raises ``ValueError`` naming ``latency``.
    """

    __slots__ = ("_description", "_fixed", "_sampler")

    def __init__(self, *, fixed: float | None, sampler: Sampler | None, description: str) -> None:
        self._fixed = fixed
        self._sampler = sampler
        self._description = description

    def __repr__(self) -> str:
        return self._description

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Latency):
            return NotImplemented
        if self._fixed is not None or other._fixed is not None:
            return self._fixed == other._fixed
        return self._description == other._description and self._sampler is other._sampler

    def __hash__(self) -> int:
        return hash((self._fixed, self._description))

    @classmethod
    def fixed(cls, seconds: float) -> Latency:
        """Always ``seconds``."""
        value = check_seconds("Latency.fixed", "seconds", seconds)
        return cls(fixed=value, sampler=None, description=f"Latency.fixed({value!r})")

    @classmethod
    def uniform(cls, low: float, high: float) -> Latency:
        """Uniform between ``low`` and ``high`` seconds."""
        low = check_seconds("Latency.uniform", "low", low)
        high = check_seconds("Latency.uniform", "high", high)
        if high < low:
            raise invalid("Latency.uniform", "high", f">= low ({low!r})", high, error=ValueError)

        def sample(rng: random.Random) -> float:
            return rng.uniform(low, high)

        return cls(fixed=None, sampler=sample, description=f"Latency.uniform({low!r}, {high!r})")

    @classmethod
    def exponential(cls, mean: float) -> Latency:
        """Exponentially distributed with the given mean (a Poisson-like service time)."""
        mean = check_seconds("Latency.exponential", "mean", mean)
        if mean == 0.0:
            return cls.fixed(0.0)
        rate = 1.0 / mean

        def sample(rng: random.Random) -> float:
            return rng.expovariate(rate)

        return cls(fixed=None, sampler=sample, description=f"Latency.exponential({mean!r})")

    @classmethod
    def from_callable(cls, sampler: Sampler) -> Latency:
        """Any function of the session's ``random.Random`` returning seconds."""
        check_callable(
            "Latency.from_callable", "sampler", sampler, expected="a function of a random.Random"
        )
        name = getattr(sampler, "__qualname__", type(sampler).__name__)
        return cls(fixed=None, sampler=sampler, description=f"Latency.from_callable({name})")

    @property
    def is_fixed(self) -> bool:
        """Whether sampling needs no randomness."""
        return self._fixed is not None

    def sample(self, rng: random.Random | None) -> float:
        """One delay in seconds. ``rng`` may be None only for a fixed latency."""
        if self._fixed is not None:
            return self._fixed
        assert self._sampler is not None
        if rng is None:
            raise ValueError(f"{self!r} needs a random.Random to sample from")
        value = self._sampler(rng)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (value >= 0.0 and math.isfinite(value))
        ):
            raise ValueError(
                f"latency: {self!r} produced {value!r}; expected a finite number of seconds >= 0"
            )
        return float(value)


LatencySpec = float | Latency | Sampler
"""What ``SimulatedAgent(latency=...)`` accepts: seconds, a ``Latency``, or a sampler."""


def as_latency(owner: str, value: object) -> Latency:
    """Coerce a ``LatencySpec`` into a ``Latency``, with errors naming ``latency``."""
    if isinstance(value, Latency):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Latency.fixed(check_seconds(owner, "latency", value))
    if callable(value):
        return Latency.from_callable(value)
    raise invalid(
        owner,
        "latency",
        "seconds (a number >= 0), a Latency, or a function of a random.Random returning seconds",
        value,
    )
