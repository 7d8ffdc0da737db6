"""``TrialGroupOutcome``: one shape of a group's outcome, made by the tally live, from a
population, and from saved records alike."""

from __future__ import annotations

from rampart.core._group_outcome import (
    interrupted_group,
    population_outcome,
    rebuild_group,
    tally_outcome,
)
from rampart.core._stats import clopper_pearson_interval, wilson_interval
from rampart.core._trial_rule import TrialRule, TrialTally, TrialVerdict
from rampart.core.result import PopulationRef, PopulationResult, Result, SafetyStatus

SAFE, UNSAFE, ERROR, UND = (
    SafetyStatus.SAFE,
    SafetyStatus.UNSAFE,
    SafetyStatus.ERROR,
    SafetyStatus.UNDETERMINED,
)


def _results(*statuses: SafetyStatus, start: int = 0) -> list[Result]:
    return [
        Result(
            status=status,
            summary=status.value,
            population=PopulationRef(id="p", index=start + i, size=10, threshold=0.5),
        )
        for i, status in enumerate(statuses)
    ]


def test_a_population_is_the_outcome_its_verdict_reads() -> None:
    """A population's outcome has its verdict, status and counts; its cancelled trials
    are not run and its uncounted ones shown, an UNSAFE one among them."""
    population = PopulationResult(
        results=_results(SAFE, SAFE, ERROR, UND, SAFE, SAFE),
        threshold=0.5,
        cancelled_count=2,
        uncounted=_results(UNSAFE, SAFE, start=6),
        concurrency={"final": 4, "peak": 8},
    )
    outcome = population_outcome(population)
    assert outcome.verdict is population.verdict is TrialVerdict.PASSED
    assert outcome.status is population.status is SAFE
    assert (outcome.counts.safe, outcome.counts.error, outcome.counts.undetermined) == (4, 1, 1)
    assert (outcome.n, outcome.executed, outcome.pass_rate) == (10, 6, population.pass_rate)
    assert (outcome.not_run, outcome.not_counted, outcome.not_counted_unsafe) == (2, 2, 1)
    assert outcome.early_stopped
    assert outcome.concurrency == {"final": 4, "peak": 8}


def test_the_interval_is_the_one_the_verdict_reads() -> None:
    """The count rule shows the 95 % Wilson interval; a confidence group the exact one
    at its own level."""
    count = TrialTally(size=20, rule=TrialRule(threshold=0.8))
    exact = TrialTally(size=20, rule=TrialRule(threshold=0.8, confidence=0.9))
    for tally in (count, exact):
        for index in range(20):
            tally.add(SAFE if index < 18 else ERROR)
    wilson = tally_outcome(count).interval
    assert (wilson.method, wilson.level) == ("wilson", 0.95)
    assert (wilson.low, wilson.high) == wilson_interval(18, 20)
    clopper = tally_outcome(exact).interval
    assert (clopper.method, clopper.level) == ("clopper-pearson", 0.9)
    assert (clopper.low, clopper.high) == clopper_pearson_interval(18, 20, 0.9)


def test_live_and_rebuilt_outcomes_are_equal() -> None:
    """The same clones give the same outcome whether the tally ran live or the group
    was rebuilt from its saved records with the facts the run stamped."""
    statuses = [SAFE, SAFE, UND, SAFE, ERROR, SAFE]
    rule = TrialRule(threshold=0.6, max_unsafe=1)
    tally = TrialTally(size=6, rule=rule)
    for status in statuses:
        tally.add(status)
    clones = {index: status for index, status in enumerate(statuses) if index != 2}
    rebuilt = rebuild_group(size=6, rule=rule, clones=clones, executed=6, no_result=1)
    assert rebuilt == tally_outcome(tally, no_result=1)


def test_missing_facts_are_incomplete_never_safe() -> None:
    """An outcome without its verdict is never SAFE, whatever its clones said."""
    rebuilt = rebuild_group(size=3, rule=None, clones={0: SAFE, 1: SAFE, 2: SAFE})
    assert rebuilt.verdict is None
    assert not rebuilt.passed
    assert rebuilt.status is UND
    assert rebuilt.missing is not None


def test_a_group_cut_short_is_incomplete_with_its_counts() -> None:
    """Interrupted: never a pass, however SAFE the clones that ran; the counts are over
    them, the clones cut short and those never run are apart, and ``missing`` says so."""
    outcome = interrupted_group(
        size=40, rule=TrialRule(), clones=dict.fromkeys(range(8), SAFE), cut_short=4
    )
    assert outcome.interrupted
    assert outcome.verdict is None
    assert outcome.status is UND
    assert (outcome.executed, outcome.counts.safe, outcome.not_run) == (8, 8, 28)
    assert outcome.not_counted == 0
    assert not outcome.early_stopped
    assert outcome.missing == (
        "8 of 40 clones ran, 4 cut short (what they recorded is kept, not counted), 28 not run"
    )


def test_a_finding_in_a_group_cut_short_still_fails_it() -> None:
    """More UNSAFE clones than ``max_unsafe`` fail the group whatever the others would
    have done: an interrupt never hides a finding."""
    clones = {0: SAFE, 1: UNSAFE, 3: SAFE}  # clone 2 was cut short
    failed = interrupted_group(size=10, rule=TrialRule(), clones=clones, cut_short=1)
    assert failed.verdict is TrialVerdict.FAILED
    assert failed.status is UNSAFE
    assert failed.missing is None
    assert failed.interrupted
    tolerated = interrupted_group(size=10, rule=TrialRule(max_unsafe=1), clones=clones, cut_short=1)
    assert tolerated.verdict is None
    assert tolerated.status is UNSAFE  # not decided, and never SAFE
