"""Trial-population statistics: the group verdict, early-stop settlement, Wilson interval.

Kept free of any execution machinery so ``PopulationResult`` and the pytest plugin's
in-item trials share one definition of "the group passed".

The verdict rule (``docs/trials.md``), applied to the trials that produced a result:

1. any UNSAFE trial -> UNSAFE (the group fails, whatever the pass rate);
2. otherwise SAFE when at least one trial is SAFE and ``safe / executed >= threshold``
   (ERROR and UNDETERMINED trials count as executed but not SAFE);
3. otherwise ERROR if any trial is ERROR, else UNDETERMINED.

The pass rate is compared as a float quotient, so 8 of 10 meets a threshold of 0.8.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from rampart._checks import check_int, check_number
from rampart.core.types import SafetyStatus

__all__ = ["StatusTally", "percent", "population_status", "wilson_interval"]

_MAX_DIGITS = 6


def percent(value: float, *, digits: int = 0) -> str:
    """``value`` (a fraction in [0, 1]) as a percentage with at least ``digits`` decimals.

    More decimals are shown where rounding would say more than the data: a rate below
    1 never prints as ``100%`` and one above 0 never as ``0%`` (1996/2000 is ``99.8%``,
    1999/2000 ``99.95%``), so a failing population never reads as a perfect one.
    """
    scaled = value * 100
    for places in range(digits, _MAX_DIGITS + 1):
        text = f"{scaled:.{places}f}"
        rounded = float(text)
        if (rounded < 100 or value >= 1) and (rounded > 0 or value <= 0):
            return f"{text}%"
    return f"{scaled:.{_MAX_DIGITS}f}%"  # pragma: no cover - within 1e-8 of 0 or 1


def population_status(
    *, safe: int, unsafe: int, error: int, executed: int, threshold: float
) -> SafetyStatus:
    """The group verdict from status counts (see the module docstring for the rule)."""
    if unsafe:
        return SafetyStatus.UNSAFE
    if safe and safe / executed >= threshold:
        return SafetyStatus.SAFE
    if error:
        return SafetyStatus.ERROR
    return SafetyStatus.UNDETERMINED


class StatusTally:
    """Incremental status counts of a population whose trials finish one by one.

    ``settled_fail()`` answers the early-stop question in O(1) per trial: can the
    trials still outstanding no longer make the group pass? A pass is never settled
    early, because any outstanding trial could still come back UNSAFE.
    """

    __slots__ = ("_counts", "size", "threshold")

    def __init__(self, *, size: int, threshold: float) -> None:
        self.size = size
        self.threshold = threshold
        self._counts = dict.fromkeys(SafetyStatus, 0)

    def add(self, status: SafetyStatus) -> None:
        self._counts[status] += 1

    def count(self, status: SafetyStatus) -> int:
        return self._counts[status]

    @property
    def executed(self) -> int:
        return sum(self._counts.values())

    def settled_fail(self) -> bool:
        """True once the group cannot pass however the outstanding trials end.

        That is the case after the first UNSAFE trial, or when even if every
        outstanding trial came back SAFE the SAFE fraction of all ``size`` trials
        would stay below the threshold (or no trial could be SAFE at all).
        """
        if self._counts[SafetyStatus.UNSAFE]:
            return True
        best_safe = self.size - self.executed + self._counts[SafetyStatus.SAFE]
        return best_safe == 0 or best_safe / self.size < self.threshold

    def status(self) -> SafetyStatus:
        return population_status(
            safe=self._counts[SafetyStatus.SAFE],
            unsafe=self._counts[SafetyStatus.UNSAFE],
            error=self._counts[SafetyStatus.ERROR],
            executed=self.executed,
            threshold=self.threshold,
        )


_OWNER = "wilson_interval"


def wilson_interval(successes: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``successes / total``.

    Stays inside [0, 1] and behaves at small ``total`` and at 0 or ``total``
    successes, where the normal (Wald) interval collapses. With no trials the
    proportion is unknown, so the interval is ``(0.0, 1.0)``.
    """
    total = check_int(_OWNER, "total", total, minimum=0)
    successes = check_int(_OWNER, "successes", successes, minimum=0, maximum=total)
    confidence = check_number(_OWNER, "confidence", confidence, above=0, below=1, noun="a number")
    if total == 0:
        return (0.0, 1.0)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    z2 = z * z
    p = successes / total
    denominator = 1.0 + z2 / total
    centre = (p + z2 / (2.0 * total)) / denominator
    half_width = z * math.sqrt(p * (1.0 - p) / total + z2 / (4.0 * total * total)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half_width)
    high = 1.0 if successes == total else min(1.0, centre + half_width)
    return (low, high)
