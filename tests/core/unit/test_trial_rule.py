"""The trial verdict rules: the count rule, confidence, sequential, max_unsafe, settlement."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

from rampart.core._trial_rule import (
    TrialRule,
    TrialTally,
    TrialVerdict,
    _sequential_bounds,
    check_rule,
)
from rampart.core.result import PopulationResult, SafetyStatus
from tests._builders import make_results

SAFE = SafetyStatus.SAFE
UNSAFE = SafetyStatus.UNSAFE
ERROR = SafetyStatus.ERROR
UND = SafetyStatus.UNDETERMINED
PASSED = TrialVerdict.PASSED
FAILED = TrialVerdict.FAILED
INCONCLUSIVE = TrialVerdict.INCONCLUSIVE

# Non-SAFE outcomes that differ for the rules: UNSAFE (the UNSAFE rule) and UNDETERMINED
# (ERROR is judged as UNDETERMINED is, except for the group status).
OUTCOMES = (SAFE, UNSAFE, UND)


def _tally(rule: TrialRule, size: int, statuses: Any) -> TrialTally:
    tally = TrialTally(size=size, rule=rule)
    for status in statuses:
        tally.add(status)
    return tally


def _counts(safe: int = 0, unsafe: int = 0, error: int = 0, und: int = 0) -> list[SafetyStatus]:
    return [SAFE] * safe + [UNSAFE] * unsafe + [ERROR] * error + [UND] * und


def _run_sequential(rule: TrialRule, size: int, statuses: Any) -> TrialVerdict:
    """What a sequential group does: add in index order, stop once settled."""
    tally = TrialTally(size=size, rule=rule)
    for status in statuses:
        if tally.settled():
            break
        tally.add(status)
    return tally.verdict()


class TestCountRule:
    @pytest.mark.parametrize(
        ("size", "threshold", "arrived", "settled"),
        [
            (5, 1.0, [], False),
            (5, 1.0, [UNSAFE], True),
            (5, 0.0, [UNSAFE], True),
            (5, 1.0, [SAFE, SAFE, SAFE, SAFE], False),
            (5, 1.0, [ERROR], True),
            (5, 1.0, [UND], True),
            (5, 0.8, [ERROR], False),
            (5, 0.8, [ERROR, UND], True),
            (5, 0.8, [SAFE, SAFE, SAFE, ERROR], False),
            (3, 0.0, [ERROR, ERROR], False),
            (3, 0.0, [ERROR, ERROR, ERROR], True),
        ],
    )
    def test_settlement_table(
        self, size: int, threshold: float, arrived: list[SafetyStatus], settled: bool
    ) -> None:
        """A fail settles on UNSAFE or an unreachable threshold; a pass never settles early."""
        tally = _tally(TrialRule(threshold=threshold), size, arrived)
        assert tally.settled() is settled
        if settled and len(arrived) < size:
            assert tally.verdict() is FAILED

    def test_settled_exactly_when_no_completion_passes(self) -> None:
        """With max_unsafe=0, settled exactly when no completion of the outstanding
        trials passes the group (today's early stop, unchanged)."""
        for size in range(1, 5):
            for threshold in (0.0, 0.25, 0.5, 0.75, 1.0):
                for done in range(size + 1):
                    for prefix in itertools.product(list(SafetyStatus), repeat=done):
                        tally = _tally(TrialRule(threshold=threshold), size, prefix)
                        can_pass = any(
                            _tally(TrialRule(threshold=threshold), size, full).status() is SAFE
                            for tail in itertools.product(list(SafetyStatus), repeat=size - done)
                            for full in [list(prefix) + list(tail)]
                        )
                        settled = tally.settled() and done < size
                        assert settled is (not can_pass and done < size), (prefix, threshold)

    def test_status_matches_population(self) -> None:
        """The incremental tally and PopulationResult agree on the verdict."""
        statuses = [SAFE, SAFE, ERROR, UND, SAFE]
        tally = _tally(TrialRule(threshold=0.6), 5, statuses)
        assert tally.executed == 5
        assert tally.count(SAFE) == 3
        assert tally.verdict() is PASSED
        assert (
            tally.status()
            is PopulationResult(results=make_results(*statuses), threshold=0.6).status
            is SAFE
        )

    def test_never_inconclusive(self) -> None:
        """INCONCLUSIVE exists only with confidence=: the count rule says yes or no."""
        for size in range(1, 5):
            for statuses in itertools.product(list(SafetyStatus), repeat=size):
                for threshold in (0.0, 0.5, 1.0):
                    verdict = _tally(TrialRule(threshold=threshold), size, statuses).verdict()
                    assert verdict is not INCONCLUSIVE


class TestMaxUnsafe:
    @pytest.mark.parametrize(
        ("statuses", "max_unsafe", "verdict", "status"),
        [
            (_counts(safe=9, unsafe=1), 0, FAILED, UNSAFE),
            (_counts(safe=9, unsafe=1), 1, PASSED, SAFE),
            (_counts(safe=8, unsafe=2), 1, FAILED, UNSAFE),
            (_counts(safe=7, unsafe=1, error=2), 1, FAILED, UNSAFE),
            (_counts(safe=7, error=3), 3, FAILED, ERROR),
        ],
    )
    def test_tolerates_up_to_k(
        self,
        statuses: list[SafetyStatus],
        max_unsafe: int,
        verdict: TrialVerdict,
        status: SafetyStatus,
    ) -> None:
        """Up to max_unsafe UNSAFE trials are tolerated (they still count as not SAFE)."""
        tally = _tally(TrialRule(threshold=0.8, max_unsafe=max_unsafe), 10, statuses)
        assert tally.verdict() is verdict
        assert tally.status() is status

    def test_settles_a_pass_only_when_no_completion_can_fail(self) -> None:
        """With k tolerated, a pass settles once even k more UNSAFE could not fail it."""
        rule = TrialRule(threshold=0.5, max_unsafe=2)
        assert not _tally(rule, 10, [SAFE] * 7).settled()  # 3 left: 3 UNSAFE would fail
        tally = _tally(rule, 10, [SAFE] * 8)
        assert tally.settled()
        assert tally.verdict() is PASSED

    def test_settlement_is_exact(self) -> None:
        """Settled exactly when every completion gets the same verdict."""
        for size in range(1, 6):
            for max_unsafe in (0, 1, 2):
                rule = TrialRule(threshold=0.6, max_unsafe=max_unsafe)
                _assert_settlement_exact(rule, size)


def _full_verdict(rule: TrialRule, statuses: Any) -> TrialVerdict:
    size = len(statuses)
    return _tally(rule, size, statuses).verdict()


def _assert_settlement_exact(rule: TrialRule, size: int) -> None:
    for done in range(size):
        for prefix in itertools.product(OUTCOMES, repeat=done):
            tally = _tally(rule, size, prefix)
            verdicts = {
                _full_verdict(rule, list(prefix) + list(tail))
                for tail in itertools.product(OUTCOMES, repeat=size - done)
            }
            assert tally.settled() is (len(verdicts) == 1), (rule, prefix, verdicts)
            if len(verdicts) == 1:
                # The early verdict is the one the full group would have had.
                assert tally.verdict() is verdicts.pop(), (rule, prefix)


class TestConfidence:
    @pytest.mark.parametrize(
        ("safe", "total", "threshold", "verdict"),
        [
            (45, 50, 0.8, INCONCLUSIVE),  # exact 95% CI 78.2-96.7%
            (95, 100, 0.85, PASSED),  # 88.7-98.4%
            (50, 100, 0.9, FAILED),  # 39.8-60.2%
            (18, 20, 0.9, INCONCLUSIVE),  # 68.3-98.8%
            (59, 60, 0.9, PASSED),  # 91.1-99.96%
            (10, 10, 0.6, PASSED),  # 69.2-100%
            (10, 10, 0.7, INCONCLUSIVE),
            (0, 10, 0.4, FAILED),  # 0-30.8%
        ],
    )
    def test_reads_the_exact_interval(
        self, safe: int, total: int, threshold: float, verdict: TrialVerdict
    ) -> None:
        """PASSED when the lower bound reaches the threshold, FAILED when the upper bound
        is below it, INCONCLUSIVE otherwise."""
        rule = TrialRule(threshold=threshold, confidence=0.95)
        statuses = _counts(safe=safe, und=total - safe)
        assert _tally(rule, total, statuses).verdict() is verdict

    def test_undetermined_and_error_count_as_not_safe(self) -> None:
        """UNDETERMINED and ERROR lower the bounds exactly as any non-SAFE trial does."""
        rule = TrialRule(threshold=0.85, confidence=0.95)
        for other in (UND, ERROR):
            statuses = [SAFE] * 95 + [other] * 5
            assert _tally(rule, 100, statuses).verdict() is PASSED
            statuses = [SAFE] * 80 + [other] * 20
            assert _tally(rule, 100, statuses).verdict() is INCONCLUSIVE

    def test_unsafe_rule_still_fails(self) -> None:
        """An UNSAFE trial beyond max_unsafe fails the group whatever the interval says."""
        statuses = [SAFE] * 99 + [UNSAFE]
        assert _tally(TrialRule(threshold=0.85, confidence=0.95), 100, statuses).verdict() is (
            FAILED
        )
        tolerant = TrialRule(threshold=0.85, confidence=0.95, max_unsafe=1)
        assert _tally(tolerant, 100, statuses).verdict() is PASSED

    def test_inconclusive_status(self) -> None:
        """An INCONCLUSIVE group is not SAFE: its status says what the trials were."""
        rule = TrialRule(threshold=0.9, confidence=0.95)
        assert _tally(rule, 20, _counts(safe=20)).status() is UND
        assert _tally(rule, 20, _counts(safe=19, error=1)).status() is ERROR
        assert _tally(rule, 20, _counts(safe=19, unsafe=1)).status() is UNSAFE

    @pytest.mark.parametrize(
        ("statuses", "threshold", "verdict", "status"),
        [
            ([SAFE], 0.5, INCONCLUSIVE, UND),  # n=1: the exact interval is [2.5%, 100%]
            ([ERROR], 0.5, INCONCLUSIVE, ERROR),  # [0%, 97.5%]
            ([SAFE] * 5, 0.5, PASSED, SAFE),  # all SAFE, 80% interval: [63.1%, 100%]
            ([ERROR] * 5, 0.5, FAILED, ERROR),  # all ERROR, 80% interval: [0%, 36.9%]
            ([SAFE] * 36, 0.9, PASSED, SAFE),  # the fewest all-SAFE trials for 0.9
            ([SAFE] * 35, 0.9, INCONCLUSIVE, UND),
            ([ERROR] * 2, 0.9, FAILED, ERROR),  # two errors suffice against 0.9
            ([UND] * 100, 0.05, FAILED, UND),  # even a 5% threshold: upper bound 3.6%
            ([UND] * 100, 0.01, INCONCLUSIVE, UND),  # but not 1%
        ],
    )
    def test_edge_cases(
        self,
        statuses: list[SafetyStatus],
        threshold: float,
        verdict: TrialVerdict,
        status: SafetyStatus,
    ) -> None:
        """One trial, all SAFE, all ERROR: the verdict follows the exact interval."""
        confidence = 0.8 if len(statuses) == 5 else 0.95
        rule = TrialRule(threshold=threshold, confidence=confidence)
        tally = _tally(rule, len(statuses), statuses)
        assert (tally.verdict(), tally.status()) == (verdict, status)

    def test_nothing_executed_is_inconclusive(self) -> None:
        """With no trial to judge, a confidence verdict can only be INCONCLUSIVE."""
        tally = TrialTally(size=0, rule=TrialRule(threshold=0.5, confidence=0.9))
        assert tally.verdict() is INCONCLUSIVE
        assert tally.status() is UND

    def test_settlement_is_exact(self) -> None:
        """Early stop of a confidence group settles exactly when every completion of the
        outstanding trials gets the same verdict, and reports that verdict."""
        for size in range(1, 6):
            for max_unsafe in (0, 2):
                rule = TrialRule(threshold=0.5, confidence=0.8, max_unsafe=max_unsafe)
                _assert_settlement_exact(rule, size)

    def test_early_verdict_can_differ_from_the_prefix_alone(self) -> None:
        """A settled FAIL is judged on all n (the best completion), not on the prefix."""
        rule = TrialRule(threshold=0.9, confidence=0.95)
        tally = _tally(rule, 100, _counts(und=20))
        assert tally.settled()
        assert tally.verdict() is FAILED


class TestSequential:
    RULE = TrialRule(threshold=0.9, confidence=0.95, sequential=True)

    def test_boundaries(self) -> None:
        """At threshold 0.9 and 95%: the earliest pass needs 48 SAFE in a row, the
        earliest fail 5 non-SAFE in a row (the reference e-values in test_stats)."""
        bounds = _sequential_bounds(0.9, 0.95)
        bounds.extend(60)
        assert bounds.pass_at[47] == 48  # impossible at 47
        assert bounds.pass_at[48] == 48
        assert bounds.fail_at[4] == -1
        assert bounds.fail_at[5] == 0
        for t in range(60):
            assert bounds.pass_at[t + 1] - bounds.pass_at[t] in (0, 1)
            assert bounds.fail_at[t + 1] - bounds.fail_at[t] in (0, 1)

    def test_decides_as_soon_as_evidence_suffices(self) -> None:
        """The 48th SAFE trial in a row passes; the 5th non-SAFE fails."""
        assert _run_sequential(self.RULE, 200, [SAFE] * 200) is PASSED
        tally = _tally(self.RULE, 200, [SAFE] * 47)
        assert not tally.settled()
        tally.add(SAFE)
        assert tally.settled()
        assert tally.verdict() is PASSED
        tally = _tally(self.RULE, 200, [UND] * 5)
        assert tally.settled()
        assert tally.verdict() is FAILED

    def test_unsafe_rule_fires_at_once(self) -> None:
        """The first UNSAFE beyond max_unsafe ends a sequential group as FAILED."""
        tally = _tally(self.RULE, 200, [SAFE, UNSAFE])
        assert tally.settled()
        assert tally.verdict() is FAILED

    def test_undecided_at_the_end_is_inconclusive(self) -> None:
        """A group that reaches n trials without a decision is INCONCLUSIVE."""
        statuses = ([SAFE] * 9 + [UND]) * 10
        assert _run_sequential(self.RULE, 100, statuses) is INCONCLUSIVE

    def test_too_few_trials_to_pass(self) -> None:
        """With fewer trials than the earliest possible pass, all SAFE is INCONCLUSIVE."""
        assert _run_sequential(self.RULE, 40, [SAFE] * 40) is INCONCLUSIVE

    def test_settlement_is_exact(self) -> None:
        """Settled exactly when every continuation (stopping at its first decision) ends
        with the same verdict."""
        for max_unsafe in (0, 3):
            rule = TrialRule(threshold=0.5, confidence=0.8, sequential=True, max_unsafe=max_unsafe)
            for size in range(1, 9):
                for done in range(size):
                    for prefix in itertools.product(OUTCOMES, repeat=done):
                        tally = TrialTally(size=size, rule=rule)
                        stopped = False
                        for status in prefix:
                            if tally.settled():
                                stopped = True
                                break
                            tally.add(status)
                        if stopped:
                            continue
                        verdicts = {
                            _run_sequential(rule, size, list(prefix) + list(tail))
                            for tail in itertools.product(OUTCOMES, repeat=size - done)
                        }
                        assert tally.settled() is (len(verdicts) == 1), (prefix, verdicts)

    @pytest.mark.parametrize("rate", [0.9, 0.88, 0.8])
    def test_false_pass_probability_is_bounded(self, rate: float) -> None:
        """Exactly (by dynamic programming over the SAFE count, not by simulation): with a
        true rate at or below the threshold the test ever passes within 400 trials with
        probability at most (1 - confidence) / 2."""
        assert _exact_decision_probabilities(self.RULE, 400, rate)[0] <= 0.025

    @pytest.mark.parametrize("rate", [0.9, 0.92, 0.99])
    def test_false_fail_probability_is_bounded(self, rate: float) -> None:
        """Likewise a true rate at or above the threshold fails with probability at most
        (1 - confidence) / 2 (non-SAFE trials here are UNDETERMINED, not UNSAFE)."""
        assert _exact_decision_probabilities(self.RULE, 400, rate)[1] <= 0.025


def _exact_decision_probabilities(rule: TrialRule, size: int, rate: float) -> tuple[float, float]:
    """P(PASSED), P(FAILED) of a sequential group whose trials are SAFE with ``rate``."""
    assert rule.confidence is not None
    bounds = _sequential_bounds(rule.threshold, rule.confidence)
    bounds.extend(size)
    alive = [1.0]  # alive[s]: probability of s SAFE so far and no decision
    passed = failed = 0.0
    for t in range(1, size + 1):
        step = [0.0] * (t + 1)
        for safe, probability in enumerate(alive):
            step[safe + 1] += probability * rate
            step[safe] += probability * (1 - rate)
        for safe in range(t + 1):
            if safe >= bounds.pass_at[t]:
                passed += step[safe]
                step[safe] = 0.0
            elif safe <= bounds.fail_at[t]:
                failed += step[safe]
                step[safe] = 0.0
        alive = step
    return passed, failed


class TestCheckRule:
    def test_defaults_are_the_count_rule(self) -> None:
        """No extension: the spec's rule."""
        rule = check_rule("f")
        assert rule == TrialRule()
        assert rule.is_count_rule

    @pytest.mark.parametrize(
        ("kwargs", "error", "match"),
        [
            (
                {"confidence": 1.0, "threshold": 0.5},
                ValueError,
                r"^f: confidence must be a number or None in \(0, 1\), got 1\.0$",
            ),
            (
                {"confidence": "0.95", "threshold": 0.5},
                TypeError,
                r"^f: confidence must be a number or None in \(0, 1\), got '0\.95'$",
            ),
            (
                {"confidence": 0.95},
                ValueError,
                r"^f: threshold must be in \(0, 1\) when confidence is set .*got 1\.0$",
            ),
            (
                {"confidence": 0.95, "threshold": 0},
                ValueError,
                r"^f: threshold must be in \(0, 1\) when confidence is set .*got 0$",
            ),
            (
                {"sequential": True, "threshold": 0.5},
                ValueError,
                r"^f: sequential must be False unless confidence is set .*got True$",
            ),
            ({"sequential": 1}, TypeError, r"^f: sequential must be a bool, got 1$"),
            ({"max_unsafe": -1}, ValueError, r"^f: max_unsafe must be non-negative, got -1$"),
            (
                {"max_unsafe": 1.0},
                TypeError,
                r"^f: max_unsafe must be a non-negative integer, got 1\.0$",
            ),
        ],
    )
    def test_rejects(self, kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
        """Bad values and conflicting combinations name the argument and the reason."""
        with pytest.raises(error, match=match):
            check_rule("f", **kwargs)

    def test_names_arguments_as_the_caller_shows_them(self) -> None:
        """The marker shows its arguments as @pytest.mark.trial(name=)."""
        with pytest.raises(ValueError, match=r"^t: @pytest\.mark\.trial\(sequential=\) must be"):
            check_rule(
                "t", threshold=0.5, sequential=True, name=lambda n: f"@pytest.mark.trial({n}=)"
            )


def test_exact_cutoffs_agree_with_the_interval() -> None:
    """The cached SAFE-count cutoffs give the same verdict as reading the interval."""
    from rampart.core._stats import clopper_pearson_interval

    rule = TrialRule(threshold=0.85, confidence=0.9)
    for total in (1, 7, 30, 101):
        for safe in range(total + 1):
            low, high = clopper_pearson_interval(safe, total, 0.9)
            expected = PASSED if low >= 0.85 else FAILED if high < 0.85 else INCONCLUSIVE
            verdict = _tally(rule, total, _counts(safe=safe, und=total - safe)).verdict()
            assert verdict is expected, (safe, total)
    assert math.isclose(0.85, rule.threshold)


class TestRebuildGroup:
    """``rebuild_group``: a saved group judged by the same tally, or INCOMPLETE."""

    RULES = (
        TrialRule(),
        TrialRule(threshold=0.7, max_unsafe=3),
        TrialRule(threshold=0.9, confidence=0.95),
        TrialRule(threshold=0.6, confidence=0.9, sequential=True),
    )

    def test_with_the_group_facts_it_is_the_tally(self) -> None:
        import random

        from rampart.core._group_outcome import rebuild_group

        chooser = random.Random(21)
        statuses = list(SafetyStatus)
        for _ in range(300):
            rule = chooser.choice(self.RULES)
            size = chooser.randint(1, 30)
            clones = {i: chooser.choice(statuses) for i in range(size)}
            silent = set(chooser.sample(range(size), chooser.randint(0, size // 3)))
            tally = TrialTally(size=size, rule=rule)
            for index in range(size):
                tally.add(SafetyStatus.UNDETERMINED if index in silent else clones[index])
            rebuilt = rebuild_group(
                size=size,
                rule=rule,
                clones={i: s for i, s in clones.items() if i not in silent},
                executed=size,
                no_result=len(silent),
            )
            assert rebuilt.verdict is tally.verdict()
            assert rebuilt.status is tally.status()
            counts = rebuilt.counts
            assert (counts.safe, counts.unsafe, counts.no_result) == (
                tally.count(SafetyStatus.SAFE),
                tally.count(SafetyStatus.UNSAFE),
                len(silent),
            )

    def test_missing_facts_are_never_a_pass(self) -> None:
        from rampart.core._group_outcome import rebuild_group

        safe = dict.fromkeys(range(4), SafetyStatus.SAFE)
        # No rule recorded (an older producer).
        assert rebuild_group(size=4, rule=None, clones=safe).verdict is None
        # A record the group's own counts say exists is gone.
        gone = rebuild_group(size=5, rule=TrialRule(), clones=safe, executed=5, no_result=0)
        assert gone.verdict is None
        assert (
            gone.missing == "1 of the 5 clones the verdict counted have no record (deleted or lost)"
        )
        # Cut short before it was decided (a journal; kill -9).
        cut = rebuild_group(size=40, rule=TrialRule(), clones=safe)
        assert cut.verdict is None
        assert cut.missing is not None
        assert cut.missing.startswith("4 of 40 clones are recorded and clone 4 is not")
        # Cut short after it was decided: an UNSAFE clone fails it whatever follows.
        failed = rebuild_group(size=40, rule=TrialRule(), clones={**safe, 4: SafetyStatus.UNSAFE})
        assert failed.verdict is TrialVerdict.FAILED

    def test_partial_and_late_clones_do_not_count(self) -> None:
        from rampart.core._group_outcome import rebuild_group

        clones = {0: SafetyStatus.UNSAFE, 1: SafetyStatus.SAFE, 2: SafetyStatus.UNSAFE}
        rebuilt = rebuild_group(
            size=10,
            rule=TrialRule(threshold=0.5),
            clones=clones,
            partial=frozenset({1}),
            executed=1,
            no_result=0,
        )
        assert rebuilt.verdict is TrialVerdict.FAILED
        # One counted, one late (UNSAFE, shown not counted), one partial: none not run
        # but the seven never recorded.
        assert (rebuilt.executed, rebuilt.not_counted, rebuilt.not_counted_unsafe) == (1, 1, 1)
        assert rebuilt.not_run == 7
