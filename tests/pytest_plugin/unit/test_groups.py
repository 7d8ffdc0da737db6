"""The trial group line, computed without a pytest run."""

from __future__ import annotations

from rampart import Result, SafetyStatus
from rampart.pytest_plugin._groups import CloneRun, ItemRun, describe, group_outcome
from rampart.pytest_plugin._markers import TrialSpec


def _run(statuses: list[SafetyStatus], threshold: float) -> ItemRun:
    run = ItemRun(spec=TrialSpec(n=len(statuses), threshold=threshold))
    for index, status in enumerate(statuses):
        clone = CloneRun(index=index)
        clone.collector.add(Result(status=status, summary="s"))
        run.clones.append(clone)
    return run


def test_documented_group_line() -> None:
    """18 of 20 at threshold 0.8 reads exactly as the documentation shows it."""
    run = _run([SafetyStatus.SAFE] * 18 + [SafetyStatus.ERROR] * 2, 0.8)
    outcome = group_outcome(run)
    assert outcome.passed
    assert describe(outcome) == ("18/20 safe, 90% pass rate, threshold: 80%, 95% CI 69–97%", None)


def test_a_failing_rate_is_never_printed_as_100() -> None:
    """1996 of 2000 is 99.8 %, not the '100% pass rate' a whole-percent format prints."""
    run = _run([SafetyStatus.SAFE] * 1996 + [SafetyStatus.ERROR] * 4, 0.999)
    outcome = group_outcome(run)
    assert not outcome.passed
    assert describe(outcome)[0].startswith("1996/2000 safe, 99.8% pass rate, threshold: 99.9%, ")


def test_unsafe_fails_whatever_the_rate() -> None:
    """One UNSAFE clone fails a group that would otherwise clear its threshold."""
    outcome = group_outcome(_run([SafetyStatus.SAFE] * 9 + [SafetyStatus.UNSAFE], 0.5))
    assert not outcome.passed
    assert outcome.counts.unsafe == 1
    assert outcome.status is SafetyStatus.UNSAFE


def test_no_result_clones_count_against_the_group() -> None:
    """A clone that recorded nothing is executed-but-not-SAFE, and counted as no-result."""
    run = _run([SafetyStatus.SAFE] * 3, 1.0)
    run.clones.append(CloneRun(index=3))
    outcome = group_outcome(run)
    assert (outcome.counts.safe, outcome.executed, outcome.counts.no_result) == (3, 4, 1)
    assert not outcome.passed
    assert outcome.status is SafetyStatus.UNDETERMINED
