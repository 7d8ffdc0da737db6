"""The populations a test body ran (``execute_trials_async`` inside a test), as trial groups.

A test may run populations itself: RAMPART's declaration form of the trial marker
(``@pytest.mark.trial`` with the ``trial_config`` fixture, where the marker does not
clone the test), or any test that calls ``execute_trials_async``. Each population is a
trial group of the test in every output, as a clone group is: ``PopulationRecorder``
is the engine's ``PopulationObserver`` for one test body (``rampart.engine._populations``),
and keeps, per population (``PopulationRun``), what each trial recorded as it finished
and the ``PopulationResult`` once it is decided.

The test's populations are numbered from 0 in the order they start (their ``group``):
the first is named as the test is (its trials ``test_x[trial-3]``, as the clones of
the clone form), the next ones ``test_x[population-1]`` and so on
(``_ledger.population_suffix``). When the test is over, the plugin hands each
population's trials over as finished units (a trial of population ``group`` is clone
``index`` of that group) and states its group entry from ``population_outcome`` (the
one ``TrialGroupOutcome`` of the population, by the rule it ran under); a population
that never finished (an interrupt, an exception out of ``execute_trials_async``) hands
over what its trials recorded as partial units, and has no group entry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from rampart.core._internal import CloneOutcome

if TYPE_CHECKING:
    from rampart.core._internal import TrialGroupOutcome

    # Only (string) annotations of ``PopulationRun``, which attrs never resolves.
    from rampart.core.result import PopulationResult, Result  # noqa: TC004

__all__ = ["PopulationRecorder", "PopulationRun"]


@attrs.define(eq=False)
class PopulationRun:
    """One population of a test: its trials' results as they finished, and its result.

    ``group`` is its number in the test (see the module docstring); ``trials`` maps a
    trial index to what that trial recorded; ``adapters`` are the adapters its
    executions ran against (for the rate-limit statistics); ``result`` is set once
    the population is decided.
    """

    group: int
    population_id: str
    size: int
    trials: dict[int, list[Result]] = attrs.field(factory=dict)
    adapters: list[object] = attrs.field(factory=list)
    result: PopulationResult | None = None

    @property
    def finished(self) -> bool:
        return self.result is not None

    def outcome(self) -> TrialGroupOutcome:
        """The group's outcome (the population is decided)."""
        from rampart.core._internal import population_outcome

        if self.result is None:
            raise ValueError("the population has not finished: it has no outcome")
        return population_outcome(self.result)

    def trial_results(self, index: int) -> list[Result]:
        """What trial ``index`` recorded, stamped as a saved run needs it to be judged
        again: with what the decided group counted (``PopulationRef.executed``; every
        trial of a population has its result), or, for a population that never
        finished, as partial (reported, never counted)."""
        population = self.result
        stamped = []
        for result in self.trials[index]:
            ref = result.population
            if ref is not None and population is None:
                ref = attrs.evolve(ref, outcome=CloneOutcome.PARTIAL)
            elif ref is not None and population is not None:
                ref = attrs.evolve(ref, executed=population.executed_count, no_result=0)
            stamped.append(attrs.evolve(result, population=ref))
        return stamped


class PopulationRecorder:
    """The plugin's ``PopulationObserver`` for one test body: ``runs`` in start order."""

    def __init__(self) -> None:
        self.runs: list[PopulationRun] = []
        self._by_id: dict[str, PopulationRun] = {}

    def population_started(self, *, population_id: str, size: int) -> None:
        run = PopulationRun(group=len(self.runs), population_id=population_id, size=size)
        self.runs.append(run)
        self._by_id[population_id] = run

    def trial_finished(self, *, results: list[Result], adapters: list[object]) -> None:
        ref = results[0].population
        if ref is None:
            raise ValueError("a population's trial result carries no PopulationRef")
        run = self._by_id[ref.id]
        run.trials[ref.index] = list(results)
        run.adapters.extend(adapters)

    def population_finished(self, population: PopulationResult) -> None:
        if population.population_id is None:
            raise ValueError("a finished population carries no population_id")
        self._by_id[population.population_id].result = population

    @property
    def results(self) -> list[Result]:
        """Every result the test's populations recorded so far."""
        return [result for run in self.runs for found in run.trials.values() for result in found]
