"""``TrialGroupOutcome``: one shape of a group's outcome, made by the tally live, from a
population, and from saved records alike."""

from __future__ import annotations

from rampart.core._group_outcome import population_outcome, rebuild_group, tally_outcome
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
