"""``rampart.engine._populations``: what a test declares to its populations, and who
watches them run (the pytest plugin's seam, exercised here without pytest's plugin)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from rampart import Result, SafetyStatus, current_trial, record_result
from rampart.engine import execute_trials_async
from rampart.engine._populations import (
    TrialConfig,
    declaring_trials,
    observing_populations,
    population_observer,
)
from rampart.engine._results import ResultCollector, bind_collector

if TYPE_CHECKING:
    from rampart.core.result import PopulationResult

pytestmark = pytest.mark.anyio


class Fixed:
    """An execution that records a side result (through ``record_result``) and returns
    its status; which trial it ran in is in its summary."""

    def __init__(self, status: SafetyStatus) -> None:
        self.status = status

    async def execute_async(self, *, adapter: object) -> Result:
        trial = current_trial()
        assert population_observer() is None  # nothing nested is watched
        record_result(Result(status=SafetyStatus.SAFE, summary="side"))
        return Result(status=self.status, summary=f"trial {trial.index if trial else None}")


class Watcher:
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def population_started(self, *, population_id: str, size: int) -> None:
        self.events.append(("started", size))

    def trial_finished(self, *, results: list[Result], adapters: list[object]) -> None:
        self.events.append(("trial", results))

    def population_finished(self, population: PopulationResult) -> None:
        self.events.append(("finished", population))


async def test_the_declared_options_fill_what_the_call_leaves_out() -> None:
    """Left out: the declared value; given: the given one; nothing declared: defaults."""
    declared = TrialConfig(n=9, threshold=0.5, max_unsafe=2, early_stop=True)
    with declaring_trials(declared):
        taken = await execute_trials_async(
            execution_factory=lambda: Fixed(SafetyStatus.UNSAFE), adapter=None, n=4
        )
        given = await execute_trials_async(
            execution_factory=lambda: Fixed(SafetyStatus.SAFE),
            adapter=None,
            n=2,
            threshold=1.0,
            max_unsafe=0,
        )
    plain = await execute_trials_async(
        execution_factory=lambda: Fixed(SafetyStatus.SAFE), adapter=None, n=2
    )
    assert (taken.threshold, taken.max_unsafe) == (0.5, 2)
    assert taken.executed_count == 3  # early_stop: the third UNSAFE settles it
    assert (given.threshold, given.max_unsafe) == (1.0, 0)
    assert (plain.threshold, plain.max_unsafe, plain.confidence) == (1.0, 0, None)


async def test_the_observer_sees_each_trial_with_what_it_recorded() -> None:
    """Started, one call per trial (its results stamped with its ref, the side result
    too, and not in the test's collector), then the population; trials know their index."""
    watcher = Watcher()
    test_collector = ResultCollector()
    with bind_collector(test_collector), observing_populations(watcher):
        population = await execute_trials_async(
            execution_factory=lambda: Fixed(SafetyStatus.SAFE), adapter=None, n=3
        )
    kinds = [kind for kind, _ in watcher.events]
    assert kinds == ["started", "trial", "trial", "trial", "finished"]
    assert watcher.events[-1][1] is population
    trials = sorted((event for kind, event in watcher.events if kind == "trial"), key=_index)
    for index, results in enumerate(trials):
        assert [result.summary for result in results] == ["side", f"trial {index}"]
        assert {result.population.index for result in results} == {index}  # type: ignore[union-attr]
        assert {result.population.id for result in results} == {population.population_id}  # type: ignore[union-attr]
    assert test_collector.results == []


async def test_without_an_observer_nothing_changes() -> None:
    """Outside a watched test, results go where they always went."""
    collector = ResultCollector()
    with bind_collector(collector):
        await execute_trials_async(
            execution_factory=lambda: Fixed(SafetyStatus.SAFE), adapter=None, n=2
        )
    assert sorted(result.summary for result in collector.results) == ["side", "side"]


def _index(results: list[Result]) -> int:
    population = results[0].population
    assert population is not None
    return population.index
