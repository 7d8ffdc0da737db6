"""Concurrent trials: run one scenario n times and decide the group verdict.

``execute_trials_async`` fans ``n`` fresh executions out in one task group under one
``anyio.CapacityLimiter``, stamps every result with its ``PopulationRef`` and returns a
``PopulationResult`` holding the per-trial results in index order plus the verdict.

Group verdict (``docs/trials.md``, ``rampart.core._trial_rule``), over the trials that
count: by default the spec's count rule (any UNSAFE trial fails the group; otherwise
the SAFE fraction must reach ``threshold``; ERROR and UNDETERMINED trials count as not
SAFE). ``confidence=`` makes it confidence-aware (PASSED, FAILED or INCONCLUSIVE from
the exact interval), ``sequential=True`` decides with an anytime-valid test after
every trial, ``max_unsafe=k`` tolerates up to ``k`` UNSAFE trials.

With ``early_stop=True`` (always with ``sequential=True``) the outstanding trials are
cancelled as soon as the verdict can no longer change. Results count in trial-index
order, never completion order: trial *i* counts once trials 0..i-1 are known, so the
verdict does not depend on the concurrency or on which trials answer fastest.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Literal

import attrs

from rampart._checks import check_bool, check_callable, check_int, invalid
from rampart._pacing import check_concurrency, default_concurrency
from rampart.core._internal import CloneOutcome, PopulationRef, TrialTally, check_rule
from rampart.core.result import PopulationResult, Result
from rampart.engine._fanout import bound, fan_out
from rampart.engine._populations import (
    declared_trials,
    no_population_context,
    population_observer,
)
from rampart.engine._results import ResultCollector, TrialInfo, bind_collector

if TYPE_CHECKING:
    from collections.abc import Callable

    from rampart.core.adapter import AgentAdapter
    from rampart.engine._execution import BaseExecution

__all__ = ["execute_trials_async"]

_OWNER = "execute_trials_async"


async def execute_trials_async(
    *,
    execution_factory: Callable[[], BaseExecution],
    adapter: AgentAdapter,
    n: int,
    threshold: float | None = None,
    concurrency: int | Literal["auto"] | None = None,
    early_stop: bool | None = None,
    confidence: float | None = None,
    sequential: bool | None = None,
    max_unsafe: int | None = None,
) -> PopulationResult:
    """Run ``n`` fresh executions concurrently and return their population verdict.

    ``execution_factory`` is called once per trial (inside the trial, after it gets a
    concurrency slot, so in index order) and must return a fresh execution, e.g.
    ``lambda: Attacks.xpia(...)``; any object with ``async execute_async(*, adapter)``
    returning a ``Result`` will do. At most ``concurrency`` trials run at once (an
    integer, or text naming one; ``"auto"`` in any case: a bound that starts at 10 and
    adapts, growing while the trials' per-turn latency stays flat and no rate-limit
    signal arrives, cut when either changes; see ``docs/trials.md``; what it did is in
    the result's ``concurrency``). ``None``: the setting of the run this is called in
    when a run declared one (``rampart._pacing``), else no bound. Each result is stamped with
    ``PopulationRef(id, index, size=n, threshold)``.

    ``threshold`` defaults to 1.0, ``early_stop``, ``sequential`` and ``max_unsafe`` to
    False, False and 0, ``confidence`` to None; inside a ``@pytest.mark.trial`` test that
    requests ``trial_config``, an option left out (or None) is the one the marker
    declared instead (``rampart.engine._populations``). Inside a test, the population
    is reported as a trial group (per-trial lines, a group line, ``trial_groups``).

    ``confidence`` (a number in (0, 1), with ``0 < threshold < 1``) makes the verdict
    confidence-aware; ``sequential=True`` (needs ``confidence``) makes ``n`` the most
    trials to run and stops as soon as the sequential test decides; ``max_unsafe``
    tolerates that many UNSAFE trials (default 0, the spec's rule). See the module
    docstring and ``docs/trials.md``.

    ``early_stop=True`` cancels the outstanding trials once the verdict can no longer
    change; they are left out of ``results`` and counted in ``cancelled_count``
    (trials that had finished after the deciding one are in ``uncounted``). ERROR
    results are verdicts, not exceptions; an exception escaping an execution (a bug,
    not an infrastructure failure) cancels the other trials and propagates in an
    exception group.
    """
    check_callable(
        _OWNER,
        "execution_factory",
        execution_factory,
        expected="a zero-argument callable returning a fresh execution",
    )
    size = check_int(_OWNER, "n", n, minimum=1)
    declared = declared_trials()

    def given(value: Any, name: str, default: Any) -> Any:
        # Left out: what the test declared, else the documented default.
        if value is not None:
            return value
        return default if declared is None else getattr(declared, name)

    rule = check_rule(
        _OWNER,
        threshold=given(threshold, "threshold", 1.0),
        confidence=given(confidence, "confidence", None),
        sequential=given(sequential, "sequential", False),
        max_unsafe=given(max_unsafe, "max_unsafe", 0),
    )
    threshold = rule.threshold
    if concurrency is None:
        setting = default_concurrency()
    else:
        setting = check_concurrency(_OWNER, "concurrency", concurrency)
    stop_early = (
        check_bool(_OWNER, "early_stop", given(early_stop, "early_stop", False)) or rule.sequential
    )

    population_id = uuid.uuid4().hex
    limiter, controller = bound(setting, jobs=size)
    observer = population_observer()

    async def run_execution() -> Result:
        execution: Any = execution_factory()
        execute = getattr(execution, "execute_async", None)
        if not callable(execute):
            raise invalid(
                _OWNER,
                "execution_factory()",
                "an execution with execute_async(*, adapter)",
                execution,
            )
        result = await execute(adapter=adapter)
        if not isinstance(result, Result):
            raise invalid(_OWNER, f"{type(execution).__name__}.execute_async()", "a Result", result)
        return result

    async def run_trial(index: int) -> Result:
        if observer is None:
            result = await run_execution()
            return attrs.evolve(result, population=stamp(index))
        # Watched (inside a test): the trial records into its own collector, so what it
        # recorded is reported as this trial's, and the observer gets it at once.
        collector = ResultCollector()
        with no_population_context(), bind_collector(collector, TrialInfo(index=index, n=size)):
            result = await run_execution()
        stamped = attrs.evolve(result, population=stamp(index))
        observer.trial_finished(
            results=_trial_results(collector, result, stamped),
            adapters=list(collector.adapters.values()),
        )
        return stamped

    def stamp(index: int) -> PopulationRef:
        return PopulationRef(
            id=population_id,
            index=index,
            size=size,
            threshold=threshold,
            confidence=rule.confidence,
            sequential=rule.sequential,
            max_unsafe=rule.max_unsafe,
            outcome=CloneOutcome.PASSED,
        )

    tally = TrialTally(size=size, rule=rule)

    def settled(_index: int, result: Result) -> bool:
        # Called in index order (fan_out), so the tally sees trials 0, 1, 2, ...
        tally.add(result.status)
        return tally.settled()

    if observer is not None:
        observer.population_started(population_id=population_id, size=size)
    fanned = await fan_out(
        run_trial,
        count=size,
        limiter=limiter,
        settled=settled if stop_early else None,
        controller=controller,
        units=_turns,
    )
    counted = [_decided(result, len(fanned.completed)) for _index, result in fanned.completed]
    population = PopulationResult(
        results=counted,
        threshold=threshold,
        population_id=population_id,
        cancelled_count=fanned.cancelled_count,
        confidence=rule.confidence,
        sequential=rule.sequential,
        max_unsafe=rule.max_unsafe,
        uncounted=[_decided(result, len(counted)) for _index, result in fanned.late],
        concurrency=None if fanned.concurrency is None else fanned.concurrency.as_dict(),
    )
    if observer is not None:
        observer.population_finished(population)
    return population


def _trial_results(collector: ResultCollector, result: Result, stamped: Result) -> list[Result]:
    """What a trial recorded, in order, with the execution's own result stamped (added
    when the execution did not record it: an object that only has ``execute_async``);
    anything else it recorded carries the trial's population too."""
    recorded = collector.results
    if not any(found is result for found in recorded):
        recorded.append(result)
    ref = stamped.population
    return [
        stamped if found is result else attrs.evolve(found, population=found.population or ref)
        for found in recorded
    ]


def _decided(result: Result, executed: int) -> Result:
    """A trial's result stamped with what the decided group counted (every trial of
    the engine has a result), so a saved population can be judged again."""
    population = result.population
    assert population is not None
    return attrs.evolve(result, population=attrs.evolve(population, executed=executed, no_result=0))


def _turns(result: Result) -> int | None:
    """A trial's units of work for its latency: its turns (None: it had none)."""
    return len(result.turns) or None
