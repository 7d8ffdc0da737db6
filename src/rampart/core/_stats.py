"""Statistics for trial populations: intervals, the sequential evidence, Fisher's test.

Pure functions of counts, with no dependency beyond :mod:`math`, so the verdict rules
(``rampart.core._trial_rule``), the reports and ``rampart diff`` share one definition:

- ``wilson_interval``: the Wilson score interval, printed beside a count-rule verdict;
- ``clopper_pearson_interval``: the exact (Clopper-Pearson) interval, whose coverage
  is at least the nominal level for every true rate and every ``n``; the
  confidence-aware verdict reads its bounds;
- ``binomial_tails``: ``P(X >= k)`` and ``P(X <= k)`` of a binomial, the exact test
  behind the Clopper-Pearson bounds;
- ``sequential_evidence``: the two one-sided mixture likelihood ratios (e-values) of
  the sequential test, for a rate above and below a threshold (``docs/trials.md``);
- ``fisher_exact``: Fisher's exact test comparing two pass counts;
- ``mcnemar``: McNemar's exact test for paired outcomes (``rampart sweep``);
- ``holm``: Holm-Bonferroni adjusted p-values, for many comparisons at once.

The regularized incomplete beta function behind all of them is evaluated by its
continued fraction (Abramowitz & Stegun 26.5.8, with Lentz's method), on the side of
the distribution where the fraction converges fast, and in log space, so tails far
below the smallest float still compare correctly.
"""

from __future__ import annotations

import math

from rampart._checks import check_choice, check_int, check_number

__all__ = [
    "binomial_tails",
    "clopper_pearson_interval",
    "exact_fail",
    "exact_pass",
    "fisher_exact",
    "holm",
    "mcnemar",
    "mixture_priors",
    "percent",
    "sequential_evidence",
    "wilson_interval",
]

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


def _check_counts(owner: str, successes: object, total: object) -> tuple[int, int]:
    checked_total = check_int(owner, "total", total, minimum=0)
    checked = check_int(owner, "successes", successes, minimum=0, maximum=checked_total)
    return checked, checked_total


def _check_confidence(owner: str, confidence: object) -> float:
    return check_number(owner, "confidence", confidence, above=0, below=1, noun="a number")


def wilson_interval(successes: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``successes / total``.

    Stays inside [0, 1] and behaves at small ``total`` and at 0 or ``total``
    successes, where the normal (Wald) interval collapses. Its coverage is close to
    the nominal level on average but can dip below it for some rates; the verdict of a
    ``confidence=`` group uses ``clopper_pearson_interval`` instead. With no trials the
    proportion is unknown, so the interval is ``(0.0, 1.0)``.
    """
    owner = "wilson_interval"
    successes, total = _check_counts(owner, successes, total)
    confidence = _check_confidence(owner, confidence)
    if total == 0:
        return (0.0, 1.0)
    from statistics import NormalDist  # on first use: ``statistics`` loads ``fractions``

    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    z2 = z * z
    p = successes / total
    denominator = 1.0 + z2 / total
    centre = (p + z2 / (2.0 * total)) / denominator
    half_width = z * math.sqrt(p * (1.0 - p) / total + z2 / (4.0 * total * total)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half_width)
    high = 1.0 if successes == total else min(1.0, centre + half_width)
    return (low, high)


# -- the regularized incomplete beta function ------------------------------------------

_FRACTION_TERMS = 10_000
_FRACTION_EPSILON = 1e-15
_TINY = 1e-300


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of ``I_x(a, b)`` (A&S 26.5.8), by the modified Lentz method.

    Converges quickly where ``x < (a + 1) / (a + b + 2)``; callers use the symmetry
    ``I_x(a, b) = 1 - I_{1-x}(b, a)`` to stay in that region.
    """
    c = 1.0
    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    fraction = d
    for m in range(1, _FRACTION_TERMS):
        # Each m contributes an even and an odd coefficient.
        for coefficient in (
            m * (b - m) * x / ((a + 2 * m - 1.0) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1.0)),
        ):
            d = 1.0 + coefficient * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + coefficient / c
            c = c if abs(c) > _TINY else _TINY
            step = c * d
            fraction *= step
        if abs(step - 1.0) < _FRACTION_EPSILON:
            return fraction
    raise ArithmeticError(  # pragma: no cover - the fraction converges for finite a, b
        f"incomplete beta: no convergence for a={a!r}, b={b!r}, x={x!r}"
    )


def _log_beta_tails(a: float, b: float, x: float) -> tuple[float, float]:
    """``(log I_x(a, b), log(1 - I_x(a, b)))``, each accurate even when far below 1e-308.

    ``I_x(a, b)`` is the CDF at ``x`` of a Beta(a, b) distribution; the smaller of the
    two tails comes from the continued fraction in log space, the larger from it.
    """
    if x <= 0.0:
        return (-math.inf, 0.0)
    if x >= 1.0:
        return (0.0, -math.inf)
    log_front = a * math.log(x) + b * math.log1p(-x) - _log_beta(a, b)
    if x < (a + 1.0) / (a + b + 2.0):
        small = log_front + math.log(_continued_fraction(a, b, x) / a)
        return (small, _log1m_exp(small))
    small = log_front + math.log(_continued_fraction(b, a, 1.0 - x) / b)
    return (_log1m_exp(small), small)


def _log1m_exp(log_value: float) -> float:
    """``log(1 - exp(log_value))`` for ``log_value <= 0``, without cancellation."""
    if log_value >= 0.0:
        return -math.inf
    if log_value > -math.log(2.0):
        return math.log(-math.expm1(log_value))
    return math.log1p(-math.exp(log_value))


def _beta_quantile(probability: float, a: float, b: float) -> float:
    """The ``x`` with ``I_x(a, b) == probability``, by bisection to float resolution.

    Bisection rather than Newton: the CDF is monotone, so it cannot fail, and the
    bounds are computed once per reported group.
    """
    target = math.log(probability)
    low, high = 0.0, 1.0
    for _ in range(1100):  # enough halvings to reach the smallest subnormal step
        middle = (low + high) / 2.0
        if middle in (low, high):
            break
        if _log_beta_tails(a, b, middle)[0] < target:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


# -- binomial tails and the exact interval ----------------------------------------------


def binomial_tails(successes: int, total: int, rate: float) -> tuple[float, float]:
    """``(P(X >= successes), P(X <= successes))`` for ``X ~ Binomial(total, rate)``.

    These are the one-sided p-values of the exact binomial test of ``rate``; the
    Clopper-Pearson bounds are the rates at which they equal ``(1 - confidence) / 2``.
    """
    owner = "binomial_tails"
    successes, total = _check_counts(owner, successes, total)
    rate = check_number(owner, "rate", rate, minimum=0, maximum=1, noun="a number")
    upper = 1.0 if successes == 0 else math.exp(_upper_tail_log(successes, total, rate))
    lower = 1.0 if successes == total else math.exp(_lower_tail_log(successes, total, rate))
    return (upper, lower)


def _upper_tail_log(successes: int, total: int, rate: float) -> float:
    """``log P(X >= successes)`` for ``1 <= successes <= total`` (= ``log I_rate(k, n-k+1)``)."""
    return _log_beta_tails(successes, total - successes + 1, rate)[0]


def _lower_tail_log(successes: int, total: int, rate: float) -> float:
    """``log P(X <= successes)`` for ``0 <= successes < total``."""
    return _log_beta_tails(successes + 1, total - successes, rate)[1]


def exact_pass(successes: int, total: int, threshold: float, confidence: float) -> bool:
    """The Clopper-Pearson lower bound is ``>= threshold`` (tested exactly, no inversion).

    Equivalent to ``P(X >= successes) <= (1 - confidence) / 2`` at ``rate=threshold``.
    """
    if successes == 0:
        return threshold <= 0.0
    return _upper_tail_log(successes, total, threshold) <= math.log((1.0 - confidence) / 2.0)


def exact_fail(successes: int, total: int, threshold: float, confidence: float) -> bool:
    """The Clopper-Pearson upper bound is ``< threshold`` (tested exactly, no inversion)."""
    if successes == total:
        return False
    return _lower_tail_log(successes, total, threshold) < math.log((1.0 - confidence) / 2.0)


def clopper_pearson_interval(
    successes: int, total: int, confidence: float = 0.95
) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval for a binomial proportion.

    Each bound misses the true rate with probability at most ``(1 - confidence) / 2``
    for every rate and every ``total``, which the Wilson interval does not guarantee.
    The price is width: it is the conservative interval. ``(0.0, 1.0)`` with no trials.
    """
    owner = "clopper_pearson_interval"
    successes, total = _check_counts(owner, successes, total)
    confidence = _check_confidence(owner, confidence)
    if total == 0:
        return (0.0, 1.0)
    tail = (1.0 - confidence) / 2.0
    if successes == 0:
        low = 0.0
    elif successes == total:
        low = tail ** (1.0 / total)
    else:
        low = _beta_quantile(tail, successes, total - successes + 1)
    if successes == total:
        high = 1.0
    elif successes == 0:
        high = 1.0 - tail ** (1.0 / total)
    else:
        high = _beta_quantile(1.0 - tail, successes + 1, total - successes)
    return (low, high)


# -- the sequential test ---------------------------------------------------------------


NEAR_WEIGHT = 8.0
"""The weight (Beta parameter) of the near-side mixing distribution's rarer outcome."""


def mixture_priors(threshold: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """The Beta(a, b) mixing distributions ``(above, below)`` of the sequential test.

    Call ``r`` the tolerated rate of the rarer outcome (``1 - threshold``, the failure
    rate, when the threshold is at least 0.5; ``threshold`` otherwise). On the side
    where the rarer outcome is *rarer* than tolerated, the mixture is the Beta with
    mean ``threshold`` whose smaller parameter is 1 (Beta(9, 1) at 0.9): it spreads
    that rate over the scale of ``r`` and tells "a tenth of it" apart quickly. On the
    side where it is *more frequent*, the mixture is centred on twice ``r`` (at most
    halfway to certainty), with weight ``NEAR_WEIGHT`` on it (Beta(32, 8) at 0.9, a
    failure rate around 0.2): the alternative a design names as "clearly worse", which
    a mixture spread towards the threshold recognises more slowly. Any mixture keeps
    the test valid (Ville's inequality holds for each); the choice only moves how many
    trials a decision takes (docs/trials.md).
    """
    rare = min(threshold, 1.0 - threshold)
    centre = min(2.0 * rare, (1.0 + rare) / 2.0)
    near = (NEAR_WEIGHT * (1.0 - centre) / centre, NEAR_WEIGHT)
    if threshold >= 0.5:
        return (threshold / (1.0 - threshold), 1.0), near
    return (near[1], near[0]), (1.0, (1.0 - threshold) / threshold)


def sequential_evidence(successes: int, failures: int, threshold: float) -> tuple[float, float]:
    """``(log E_above, log E_below)``: the sequential test's evidence after these counts.

    ``E_above`` is the likelihood ratio of the data under a SAFE rate ``p`` above
    ``threshold`` against ``p = threshold``, averaged over ``p`` drawn from the
    ``above`` distribution of ``mixture_priors(threshold)`` restricted to
    ``(threshold, 1]``; ``E_below`` the same with the ``below`` one restricted to
    ``[0, threshold)``. Whatever the true rate on the
    other side of the threshold, each is a nonnegative supermartingale starting at 1,
    so by Ville's inequality it ever reaches ``1 / alpha`` with probability at most
    ``alpha``: a test that may stop after any trial. Depends on the counts only.
    """
    owner = "sequential_evidence"
    successes = check_int(owner, "successes", successes, minimum=0)
    failures = check_int(owner, "failures", failures, minimum=0)
    threshold = check_number(owner, "threshold", threshold, above=0, below=1, noun="a number")
    return _log_evidence(successes, failures, threshold)


def _log_evidence(successes: int, failures: int, threshold: float) -> tuple[float, float]:
    above, below = mixture_priors(threshold)
    return (
        _log_side(successes, failures, threshold, above, upper=True),
        _log_side(successes, failures, threshold, below, upper=False),
    )


def _log_side(
    successes: int, failures: int, threshold: float, prior: tuple[float, float], *, upper: bool
) -> float:
    """log of one side's mixture likelihood ratio: B(a+S, b+F) / B(a, b) over the
    null's likelihood, renormalised to the prior's mass on that side."""
    a, b = prior
    side = 1 if upper else 0
    prior_mass = _log_beta_tails(a, b, threshold)[side]
    posterior_mass = _log_beta_tails(a + successes, b + failures, threshold)[side]
    shared = (
        _log_beta(a + successes, b + failures)
        - _log_beta(a, b)
        - successes * math.log(threshold)
        - failures * math.log1p(-threshold)
    )
    return shared + posterior_mass - prior_mass


# -- Fisher's exact test ---------------------------------------------------------------

_ALTERNATIVES = ("two-sided", "greater", "less")
# Tables as likely as the observed one count as "at least as extreme" in the two-sided
# test; the tolerance absorbs rounding in the log-probabilities.
_RELATIVE_TOLERANCE = 1e-7


def fisher_exact(
    successes_a: int,
    total_a: int,
    successes_b: int,
    total_b: int,
    *,
    alternative: str = "two-sided",
) -> float:
    """The p-value of Fisher's exact test comparing two pass counts.

    Conditional on both totals and on the pooled number of successes, the successes of
    sample A follow a hypergeometric distribution under "same pass rate".
    ``alternative="greater"``: the evidence that A's rate is higher (the probability of
    at least ``successes_a``); ``"less"``: that it is lower; ``"two-sided"`` (default):
    that they differ (the probability of every table no more likely than the observed
    one). Returns 1.0 when either sample is empty.
    """
    owner = "fisher_exact"
    total_a = check_int(owner, "total_a", total_a, minimum=0)
    successes_a = check_int(owner, "successes_a", successes_a, minimum=0, maximum=total_a)
    total_b = check_int(owner, "total_b", total_b, minimum=0)
    successes_b = check_int(owner, "successes_b", successes_b, minimum=0, maximum=total_b)
    alternative = check_choice(owner, "alternative", alternative, _ALTERNATIVES)
    if total_a == 0 or total_b == 0:
        return 1.0
    pooled = successes_a + successes_b
    low = max(0, pooled - total_b)
    high = min(pooled, total_a)
    # Unnormalised log-probabilities; dividing by their own sum (rather than by the
    # binomial normaliser) makes the whole support sum to exactly 1.
    log_weight = {
        x: _log_choose(pooled, x) + _log_choose(total_a + total_b - pooled, total_a - x)
        for x in range(low, high + 1)
    }
    if alternative == "greater":
        chosen = [w for x, w in log_weight.items() if x >= successes_a]
    elif alternative == "less":
        chosen = [w for x, w in log_weight.items() if x <= successes_a]
    else:
        cutoff = log_weight[successes_a] + math.log1p(_RELATIVE_TOLERANCE)
        chosen = [w for w in log_weight.values() if w <= cutoff]
    top = max(log_weight.values())
    total = math.fsum(math.exp(w - top) for w in log_weight.values())
    return min(1.0, math.fsum(math.exp(w - top) for w in chosen) / total)


def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def mcnemar(changed_one_way: int, changed_other_way: int) -> float:
    """Two-sided exact McNemar p-value for paired outcomes.

    The arguments are the discordant pairs (e.g. SAFE before and not after, and the
    reverse). Under the null hypothesis each discordant pair goes either way with
    probability 1/2, so the p-value is a two-sided binomial test, summed exactly in
    integers; ``1.0`` with no discordant pair.
    """
    owner = "mcnemar"
    one_way = check_int(owner, "changed_one_way", changed_one_way, minimum=0)
    other_way = check_int(owner, "changed_other_way", changed_other_way, minimum=0)
    total = one_way + other_way
    if total == 0:
        return 1.0
    tail = sum(math.comb(total, k) for k in range(min(one_way, other_way) + 1))
    return min(1.0, float(2 * tail / 2**total))


def holm(p_values: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in input order.

    Comparing many groups at once, some would look significant by chance; the
    adjusted values keep the chance of any false alarm at most alpha.
    """
    checked = [
        check_number("holm", f"p_values[{index}]", value, minimum=0.0, maximum=1.0)
        for index, value in enumerate(p_values)
    ]
    order = sorted(range(len(checked)), key=checked.__getitem__)
    adjusted = [1.0] * len(checked)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(checked) - rank) * checked[index]))
        adjusted[index] = running
    return adjusted
