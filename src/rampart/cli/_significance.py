"""Exact small-sample tests for comparing runs: Fisher's exact test, McNemar's, Holm.

Exact (no normal approximation), because trial groups are small (20 to a few hundred
clones) and a p-value decides whether a change is called a regression. Fisher's test
is the statistics module's (``rampart.core._stats``), which the trial verdicts use too.
"""

from __future__ import annotations

from math import comb

__all__ = ["fisher_less", "holm", "mcnemar"]


def fisher_less(safe_old: int, total_old: int, safe_new: int, total_new: int) -> float:
    """One-sided Fisher exact p-value that the new pass rate is *lower* than the old.

    The 2x2 table is (SAFE, not SAFE) x (old, new); under the null hypothesis (one
    pass rate for both) the number of SAFE clones in the new run is hypergeometric
    given the margins. The p-value is the probability of seeing as few SAFE in the
    new run as observed, or fewer. ``1.0`` when either run has no clones. The test
    itself is ``rampart.core._stats.fisher_exact`` (one- and two-sided), shared with
    the trial verdicts' statistics.
    """
    from rampart.core._stats import fisher_exact

    return fisher_exact(safe_new, total_new, safe_old, total_old, alternative="less")


def mcnemar(changed_one_way: int, changed_other_way: int) -> float:
    """Two-sided exact McNemar p-value for paired outcomes.

    The arguments are the discordant pairs (e.g. SAFE before and not after, and the
    reverse). Under the null hypothesis each discordant pair goes either way with
    probability 1/2, so the p-value is a two-sided binomial test; ``1.0`` with no
    discordant pair.
    """
    total = changed_one_way + changed_other_way
    if total == 0:
        return 1.0
    smaller = min(changed_one_way, changed_other_way)
    tail = sum(comb(total, k) for k in range(smaller + 1))
    return min(1.0, float(2 * tail / 2**total))


def holm(p_values: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in input order.

    Comparing many groups at once, some would look significant by chance; the
    adjusted values keep the chance of any false alarm at most alpha.
    """
    order = sorted(range(len(p_values)), key=p_values.__getitem__)
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted
