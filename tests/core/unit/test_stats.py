"""The statistics module: intervals, binomial tails, the sequential evidence, Fisher's test.

Reference values: scipy is not in the dev extra, so they are hard-coded. Each was
computed with scipy 1.17 (``scipy.stats.beta.ppf``, ``binom.sf/cdf``,
``scipy.special.betainc/betaincc``, ``scipy.stats.fisher_exact``) and checked against
an independent 40-digit evaluation with mpmath (bisection on ``mpmath.betainc`` for
the Clopper-Pearson bounds, the closed forms ``(alpha/2) ** (1/n)`` at 0 and n
successes; ``mpmath.betainc`` for the evidence); the two agreed to 1e-12 or better.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rampart.core._stats import (
    binomial_tails,
    clopper_pearson_interval,
    fisher_exact,
    mixture_priors,
    percent,
    sequential_evidence,
    wilson_interval,
)

# (successes, total, confidence, low, high)
CLOPPER_PEARSON = [
    (0, 1, 0.95, 0.0, 0.975),
    (1, 1, 0.95, 0.025000000000000022, 1.0),
    (0, 10, 0.95, 0.0, 0.3084971078187607),
    (1, 10, 0.95, 0.0025285785444617865, 0.4450161170281954),
    (8, 10, 0.95, 0.4439045376923585, 0.9747892736731666),
    (10, 10, 0.95, 0.6915028921812392, 1.0),
    (18, 20, 0.95, 0.6830172859809176, 0.9876514728297052),
    (45, 50, 0.95, 0.7818646335657977, 0.9667249064109775),
    (95, 100, 0.95, 0.8871650888945373, 0.9835681208179479),
    (50, 100, 0.95, 0.398321129503301, 0.601678870496699),
    (990, 1000, 0.95, 0.9816867569448875, 0.9951944893089507),
    (8, 10, 0.99, 0.35179883369516324, 0.9891494906202595),
    (190, 200, 0.99, 0.8960378442460176, 0.9811645116951908),
    (5, 10, 0.9, 0.22244110100812936, 0.7775588989918706),
    (59, 60, 0.95, 0.910600949942513, 0.999578125547658),
]

# (successes, total, rate, P(X >= successes), P(X <= successes))
BINOMIAL_TAILS = [
    (3, 10, 0.5, 0.9453125, 0.171875),
    (9, 10, 0.9, 0.7360989291000001, 0.6513215599),
    (95, 100, 0.9, 0.05757688648703389, 0.9762889173365232),
    (0, 5, 0.3, 1.0, 0.16807000000000002),
    (5, 5, 0.3, 0.0024299999999999994, 1.0),
    (180, 200, 0.95, 0.998840091749252, 0.0026645795498294743),
    (1, 1000, 0.01, 0.9999568287525893, 0.0004792444535789191),
]

# (successes, failures, threshold, log E_above, log E_below)
EVIDENCE = [
    (10, 0, 0.9, 0.6513430444897699, -1.0197089099414716),
    (48, 0, 0.9, 3.6990865142830294, -2.81449626339979),
    (47, 0, 0.9, 3.611150968454968, -2.786696975941573),
    (0, 5, 0.9, -2.1186386341712042, 4.326515373603225),
    (0, 4, 0.9, -1.9139674587486155, 3.322686307083859),
    (80, 20, 0.9, -2.943731592523945, 3.843165728775142),
    (200, 5, 0.9, 7.934654827324895, -4.31315347278523),
    (5, 5, 0.5, -0.9958525547103407, -1.23980186770479),
    (30, 3, 0.3, 23.95480917292144, -3.6363134020575174),
    (1000, 50, 0.95, -1.935119118858023, -3.183808224021419),
    (3, 40, 0.8, -4.043074900421701, 43.51067781051745),
]

# ((successes_a, total_a, successes_b, total_b), two-sided, greater, less)
FISHER = [
    ((8, 10, 2, 10), 0.023014137565221155, 0.011507068782610578, 0.9994533330446643),
    ((3, 20, 10, 20), 0.040742395024931176, 0.9971321631499607, 0.020371197512465588),
    ((0, 5, 5, 5), 0.007936507936507938, 1.0, 0.003968253968253969),
    ((45, 50, 40, 50), 0.2623394573533714, 0.1311697286766857, 0.9547409977103912),
    ((1, 1, 0, 1), 1.0, 0.5, 1.0),
    ((190, 200, 170, 200), 0.001284932759445198, 0.000642466379722599, 0.9998243453290426),
    ((7, 12, 7, 12), 1.0, 0.6599138511239737, 0.6599138511239736),
]

CONFIDENCES = st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99, 0.999])


@st.composite
def counts(draw: st.DrawFn, max_total: int = 400) -> tuple[int, int]:
    total = draw(st.integers(min_value=1, max_value=max_total))
    return draw(st.integers(min_value=0, max_value=total)), total


class TestWilsonInterval:
    @pytest.mark.parametrize(
        ("successes", "total", "low", "high"),
        [
            (0, 10, 0.0, 0.2775),
            (0, 20, 0.0, 0.1611),
            (0, 30, 0.0, 0.1135),
            (2, 20, 0.0279, 0.3010),
            (8, 10, 0.4902, 0.9433),
            (16, 20, 0.5840, 0.9193),
            (5, 10, 0.2366, 0.7634),
            (10, 10, 0.7225, 1.0),
        ],
    )
    def test_known_values(self, successes: int, total: int, low: float, high: float) -> None:
        """95% Wilson bounds match published values to four decimals."""
        got_low, got_high = wilson_interval(successes, total)
        assert got_low == pytest.approx(low, abs=5e-5)
        assert got_high == pytest.approx(high, abs=5e-5)

    def test_extremes_are_exact(self) -> None:
        """Zero successes give a lower bound of exactly 0; all successes an upper bound of 1."""
        assert wilson_interval(0, 7)[0] == 0.0
        assert wilson_interval(7, 7)[1] == 1.0

    def test_higher_confidence_is_wider(self) -> None:
        """A 99% interval contains the 95% interval."""
        low95, high95 = wilson_interval(8, 10, 0.95)
        low99, high99 = wilson_interval(8, 10, 0.99)
        assert low99 < low95
        assert high99 > high95

    def test_symmetry(self) -> None:
        """Swapping successes and failures mirrors the interval around one half."""
        low, high = wilson_interval(3, 11)
        mirror_low, mirror_high = wilson_interval(8, 11)
        assert low == pytest.approx(1 - mirror_high)
        assert high == pytest.approx(1 - mirror_low)

    def test_no_trials(self) -> None:
        """With no trials nothing is known: the interval is [0, 1]."""
        assert wilson_interval(0, 0) == (0.0, 1.0)

    @settings(max_examples=200, deadline=None)
    @given(counts(), CONFIDENCES)
    def test_contains_the_estimate(self, pair: tuple[int, int], confidence: float) -> None:
        """The interval lies in [0, 1] and contains the observed rate."""
        successes, total = pair
        low, high = wilson_interval(successes, total, confidence)
        assert 0.0 <= low <= successes / total <= high <= 1.0

    @pytest.mark.parametrize(
        ("args", "error", "match"),
        [
            (
                (True, 3),
                TypeError,
                r"^wilson_interval: successes must be an integer in \[0, 3\], got True",
            ),
            (
                (1, 3.0),
                TypeError,
                r"^wilson_interval: total must be a non-negative integer, got 3\.0",
            ),
            ((4, 3), ValueError, r"^wilson_interval: successes must be in \[0, 3\], got 4"),
            ((-1, 3), ValueError, r"^wilson_interval: successes must be in \[0, 3\], got -1"),
            ((0, -1), ValueError, r"^wilson_interval: total must be non-negative, got -1"),
            (
                (1, 3, 0.0),
                ValueError,
                r"^wilson_interval: confidence must be a number in \(0, 1\), got 0\.0",
            ),
            ((1, 3, 1.0), ValueError, r"confidence must be a number in \(0, 1\), got 1\.0"),
            ((1, 3, math.nan), ValueError, r"confidence must be a number in \(0, 1\), got nan"),
            ((1, 3, True), TypeError, r"confidence must be a number in \(0, 1\), got True"),
            ((1, 3, "0.95"), TypeError, r"confidence must be a number in \(0, 1\), got '0\.95'"),
        ],
    )
    def test_rejects_bad_arguments(
        self, args: tuple[Any, ...], error: type[Exception], match: str
    ) -> None:
        """Bad counts and confidences are rejected with the argument named."""
        with pytest.raises(error, match=match):
            wilson_interval(*args)


class TestClopperPearson:
    @pytest.mark.parametrize(("successes", "total", "confidence", "low", "high"), CLOPPER_PEARSON)
    def test_reference_values(
        self, successes: int, total: int, confidence: float, low: float, high: float
    ) -> None:
        """Bounds match scipy's beta quantiles (and a 40-digit mpmath check) to 1e-12."""
        got_low, got_high = clopper_pearson_interval(successes, total, confidence)
        assert got_low == pytest.approx(low, abs=1e-12)
        assert got_high == pytest.approx(high, abs=1e-12)

    def test_closed_forms_at_the_ends(self) -> None:
        """All successes give a lower bound of (alpha/2)^(1/n); none an upper of 1 minus it."""
        for total in (1, 2, 7, 35, 1000):
            low, high = clopper_pearson_interval(total, total)
            assert (low, high) == (pytest.approx(0.025 ** (1 / total), rel=1e-14), 1.0)
            low, high = clopper_pearson_interval(0, total)
            assert (low, high) == (0.0, pytest.approx(1 - 0.025 ** (1 / total), rel=1e-14))

    def test_one_trial(self) -> None:
        """With n=1 a single SAFE shows little: the lower bound is alpha/2."""
        assert clopper_pearson_interval(1, 1, 0.95) == pytest.approx((0.025, 1.0))
        assert clopper_pearson_interval(0, 1, 0.95) == pytest.approx((0.0, 0.975))

    def test_no_trials(self) -> None:
        """With no trials nothing is known: the interval is [0, 1]."""
        assert clopper_pearson_interval(0, 0) == (0.0, 1.0)

    def test_large_counts(self) -> None:
        """A million trials still give finite, ordered bounds close to the estimate."""
        low, high = clopper_pearson_interval(999_000, 1_000_000)
        assert 0.9989 < low < 0.999 < high < 0.9991

    @settings(max_examples=150, deadline=None)
    @given(counts(), CONFIDENCES)
    def test_contains_the_estimate_and_wilson(
        self, pair: tuple[int, int], confidence: float
    ) -> None:
        """The exact interval contains the observed rate and is at least as wide as
        Wilson's on the side where Wilson is known to be too short (never narrower at
        both ends)."""
        successes, total = pair
        low, high = clopper_pearson_interval(successes, total, confidence)
        assert 0.0 <= low <= successes / total <= high <= 1.0
        wilson_low, wilson_high = wilson_interval(successes, total, confidence)
        assert low <= wilson_low + 1e-12 or high >= wilson_high - 1e-12

    @settings(max_examples=150, deadline=None)
    @given(counts(max_total=200))
    def test_monotone_in_successes(self, pair: tuple[int, int]) -> None:
        """One more success never lowers either bound."""
        successes, total = pair
        if successes == total:
            return
        low, high = clopper_pearson_interval(successes, total)
        next_low, next_high = clopper_pearson_interval(successes + 1, total)
        assert next_low > low
        assert next_high > high

    @settings(max_examples=150, deadline=None)
    @given(counts(max_total=200), CONFIDENCES, CONFIDENCES)
    def test_monotone_in_confidence(
        self, pair: tuple[int, int], first: float, second: float
    ) -> None:
        """A higher confidence gives an interval that contains the lower one's."""
        successes, total = pair
        lower, higher = sorted((first, second))
        low, high = clopper_pearson_interval(successes, total, lower)
        wide_low, wide_high = clopper_pearson_interval(successes, total, higher)
        assert wide_low <= low
        assert wide_high >= high

    @settings(max_examples=100, deadline=None)
    @given(counts(max_total=300))
    def test_bounds_are_where_the_tails_equal_alpha(self, pair: tuple[int, int]) -> None:
        """At the lower bound P(X >= k) is alpha/2, at the upper P(X <= k) is: the
        interval is the inversion of the exact test."""
        successes, total = pair
        low, high = clopper_pearson_interval(successes, total)
        if successes > 0:
            assert binomial_tails(successes, total, low)[0] == pytest.approx(0.025, rel=1e-7)
        if successes < total:
            assert binomial_tails(successes, total, high)[1] == pytest.approx(0.025, rel=1e-7)

    def test_rejects_bad_arguments(self) -> None:
        """Counts and confidence are checked with the argument named."""
        with pytest.raises(ValueError, match=r"^clopper_pearson_interval: successes must be in"):
            clopper_pearson_interval(5, 4)
        with pytest.raises(ValueError, match=r"confidence must be a number in \(0, 1\), got 1"):
            clopper_pearson_interval(1, 4, 1)


class TestBinomialTails:
    @pytest.mark.parametrize(("successes", "total", "rate", "upper", "lower"), BINOMIAL_TAILS)
    def test_reference_values(
        self, successes: int, total: int, rate: float, upper: float, lower: float
    ) -> None:
        """Both tails match scipy's binomial survival function and CDF."""
        got_upper, got_lower = binomial_tails(successes, total, rate)
        assert got_upper == pytest.approx(upper, rel=1e-11)
        assert got_lower == pytest.approx(lower, rel=1e-11)

    def test_far_tail_is_not_zero(self) -> None:
        """A tail far below 1e-300 is still resolved in log space, not rounded away."""
        upper, lower = binomial_tails(5000, 5000, 0.5)
        assert upper == 0.0  # 2**-5000 underflows as a float, but it was computed
        assert lower == 1.0
        upper, _ = binomial_tails(1000, 1000, 0.5)
        assert upper == pytest.approx(2.0**-1000, rel=1e-9)

    def test_degenerate_rates(self) -> None:
        """A rate of 0 or 1 puts all mass on one count."""
        assert binomial_tails(0, 5, 0.0) == (1.0, 1.0)
        assert binomial_tails(1, 5, 0.0) == (0.0, 1.0)
        assert binomial_tails(5, 5, 1.0) == (1.0, 1.0)
        assert binomial_tails(4, 5, 1.0) == (1.0, 0.0)


class TestSequentialEvidence:
    @pytest.mark.parametrize(("successes", "failures", "threshold", "above", "below"), EVIDENCE)
    def test_reference_values(
        self, successes: int, failures: int, threshold: float, above: float, below: float
    ) -> None:
        """Both log e-values match a 40-digit mpmath evaluation of the two integrals."""
        got_above, got_below = sequential_evidence(successes, failures, threshold)
        assert got_above == pytest.approx(above, abs=1e-9)
        assert got_below == pytest.approx(below, abs=1e-9)

    def test_starts_at_one(self) -> None:
        """Before any trial both e-values are exactly 1 (log 0)."""
        for threshold in (0.1, 0.5, 0.9, 0.999):
            assert sequential_evidence(0, 0, threshold) == pytest.approx((0.0, 0.0), abs=1e-12)

    def test_far_side_prior_has_the_threshold_as_mean(self) -> None:
        """Where the rarer outcome is rarer than tolerated, the mixing Beta has mean
        equal to the threshold and smaller parameter 1 (Beta(9, 1) at 0.9)."""
        for threshold in (0.05, 0.3, 0.5, 0.9, 0.99):
            above, below = mixture_priors(threshold)
            a, b = above if threshold >= 0.5 else below
            assert a / (a + b) == pytest.approx(threshold)
            assert min(a, b) == 1.0

    def test_near_side_prior_is_centred_on_twice_the_tolerated_rate(self) -> None:
        """Where the rarer outcome is more frequent than tolerated, the mixing Beta is
        centred on twice its tolerated rate (at most halfway to certainty), with weight
        8 on that outcome: Beta(32, 8) at 0.9."""
        assert mixture_priors(0.9)[1] == pytest.approx((32.0, 8.0))
        assert mixture_priors(0.1)[0] == pytest.approx((8.0, 32.0))
        for threshold, failure_rate in ((0.99, 0.02), (0.8, 0.4), (0.6, 0.7), (0.5, 0.75)):
            a, b = mixture_priors(threshold)[1]
            assert b / (a + b) == pytest.approx(failure_rate)
            assert b == 8.0
            if threshold > 0.5:  # and the mirror image below 0.5, on the SAFE rate
                a, b = mixture_priors(1.0 - threshold)[0]
                assert a / (a + b) == pytest.approx(failure_rate)
                assert a == 8.0

    @settings(max_examples=200, deadline=None)
    @given(
        st.integers(min_value=0, max_value=300),
        st.integers(min_value=0, max_value=300),
        st.sampled_from([0.3, 0.5, 0.8, 0.9, 0.95]),
    )
    def test_monotone_in_each_outcome(
        self, successes: int, failures: int, threshold: float
    ) -> None:
        """A SAFE trial raises the evidence for "above" and lowers it for "below"; a
        non-SAFE trial does the reverse (what makes the decision boundaries move by at
        most one per trial)."""
        above, below = sequential_evidence(successes, failures, threshold)
        safe_above, safe_below = sequential_evidence(successes + 1, failures, threshold)
        fail_above, fail_below = sequential_evidence(successes, failures + 1, threshold)
        assert safe_above > above > fail_above
        assert safe_below < below < fail_below

    def test_expected_value_under_the_null_is_one(self) -> None:
        """At p = threshold each e-value is a martingale: its mean after t trials is 1."""
        threshold, trials = 0.9, 25
        for side in (0, 1):
            mean = math.fsum(
                math.comb(trials, k)
                * threshold**k
                * (1 - threshold) ** (trials - k)
                * math.exp(sequential_evidence(k, trials - k, threshold)[side])
                for k in range(trials + 1)
            )
            assert mean == pytest.approx(1.0, rel=1e-9)

    def test_rejects_bad_arguments(self) -> None:
        """Negative counts and thresholds outside (0, 1) are rejected."""
        with pytest.raises(ValueError, match=r"^sequential_evidence: failures must be non-neg"):
            sequential_evidence(1, -1, 0.9)
        with pytest.raises(ValueError, match=r"threshold must be a number in \(0, 1\), got 1"):
            sequential_evidence(1, 1, 1)


class TestFisherExact:
    @pytest.mark.parametrize(("table", "two_sided", "greater", "less"), FISHER)
    def test_reference_values(
        self, table: tuple[int, int, int, int], two_sided: float, greater: float, less: float
    ) -> None:
        """All three alternatives match scipy.stats.fisher_exact."""
        assert fisher_exact(*table) == pytest.approx(two_sided, rel=1e-10)
        assert fisher_exact(*table, alternative="greater") == pytest.approx(greater, rel=1e-10)
        assert fisher_exact(*table, alternative="less") == pytest.approx(less, rel=1e-10)

    def test_swapping_samples_swaps_the_one_sided_tests(self) -> None:
        """ "A greater than B" is "B less than A"; the two-sided p-value is symmetric."""
        assert fisher_exact(45, 50, 40, 50, alternative="greater") == pytest.approx(
            fisher_exact(40, 50, 45, 50, alternative="less")
        )
        assert fisher_exact(45, 50, 40, 50) == pytest.approx(fisher_exact(40, 50, 45, 50))

    def test_empty_sample(self) -> None:
        """With an empty sample nothing is compared: p = 1."""
        assert fisher_exact(0, 0, 3, 5) == 1.0

    def test_rejects_bad_arguments(self) -> None:
        """Counts above their totals and unknown alternatives are rejected."""
        with pytest.raises(ValueError, match=r"^fisher_exact: successes_b must be in \[0, 5\]"):
            fisher_exact(1, 5, 6, 5)
        with pytest.raises(ValueError, match=r"alternative must be one of 'two-sided', 'greater'"):
            fisher_exact(1, 5, 2, 5, alternative="two_sided")


class TestPercent:
    def test_never_rounds_to_a_perfect_or_empty_rate(self) -> None:
        """A rate below 1 never prints as 100%, one above 0 never as 0%."""
        assert percent(1999 / 2000) == "99.95%"
        assert percent(1 / 3000) == "0.03%"
        assert percent(1.0) == "100%"
        assert percent(0.5, digits=1) == "50.0%"
