"""Per-item hooks: read the markers, run the body (or its trial clones), hand over results.

Each item carries one ``ItemState`` in its stash: its trial settings and harm
category (read at collection), its test hash and what a resumed journal supplies for
it, a usage error to report in setup, the collector for what its fixtures record,
and the ``ItemRun`` its call produced.

Results leave an item as ``FinishedUnit`` entries, through the process's
``ItemOutlet`` (the run ledger, or on an xdist worker the test report), as soon as
they are final: each trial clone when its body finishes, and the rest (a plain
test's body, what fixtures recorded) after teardown -- the last phase that can
record results. The trial group's record follows after teardown. An item that an
interrupt (or ``pytest.exit``) stops hands over what it has, as ``PARTIAL`` units.
"""

from __future__ import annotations

import inspect
import math
import uuid
import warnings
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import pytest

from rampart._text import one_line
from rampart.core._internal import (
    CASE_KEY,
    HARM_TAGS_KEY,
    PARAM_ID_KEY,
    PARAMS_KEY,
    PAYLOAD_KEY,
    CloneOutcome,
    PopulationRef,
    severity,
)
from rampart.core.result import Result
from rampart.engine._internal import ResultCollector
from rampart.pytest_plugin._exit_status import USAGE_ERROR_PROPERTY
from rampart.pytest_plugin._groups import (
    CloneListener,
    CloneRun,
    ItemRun,
    count_resumed,
    group_outcome,
    judge,
)
from rampart.pytest_plugin._ledger import (
    Attribution,
    FinishedUnit,
    RecordedResult,
    UnitOutcome,
    population_suffix,
)
from rampart.pytest_plugin._markers import (
    TRIAL_CONFIG_FIXTURE,
    TRIAL_CONFIG_KEY,
    CloneCase,
    NoResultWarning,
    TrialSpec,
    harm_of,
    payload_case,
    trial_spec_of,
)
from rampart.pytest_plugin._report import note_backend
from rampart.pytest_plugin._runner import collecting, wrap_test_function

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Sequence
    from contextlib import AbstractContextManager

    # Only (string) annotations of ``ItemState``, which attrs never resolves: they load
    # when a run first needs them (a trial item, a resumed run).
    from rampart.core._internal import TrialGroupOutcome  # noqa: TC004
    from rampart.pytest_plugin._clone_fixtures import ClonePlan  # noqa: TC004
    from rampart.pytest_plugin._layers import LimitTracker
    from rampart.pytest_plugin._markers import MarkerOptions
    from rampart.pytest_plugin._populations import PopulationRun
    from rampart.pytest_plugin._resume import ItemResume, ResumePlan  # noqa: TC004
    from rampart.reporting._internal import TrialGroupSummary

__all__ = ["ITEM_KEY", "NO_RESULT", "ItemHooks", "ItemOutlet", "ItemState"]

ITEM_KEY = pytest.StashKey["ItemState"]()

NO_RESULT = "recorded no rampart result"


class ItemOutlet(Protocol):
    """Where an item's finished results go (the ledger, or an xdist worker's report)."""

    def record(self, item: pytest.Item, unit: FinishedUnit) -> None:
        """A unit whose results are final (a clone, or the rest of the test)."""

    def deliver(
        self,
        item: pytest.Item,
        report: pytest.TestReport | None,
        groups: Sequence[TrialGroupSummary],
    ) -> None:
        """The item is over (``report`` is None when an interrupt stopped it); ``groups``
        are its trial groups' entries (its clone group, or the populations it ran)."""

    def warn(self, message: str) -> None:
        """A ``RAMPART WARNING`` line for the reporting process."""

    def backend_seen(self, backend: str) -> None:
        """A test ran on this anyio backend (the report's ``run.anyio_backends``)."""


@attrs.define(eq=False)
class ItemState:
    """What the plugin knows about one item, kept in its stash.

    ``spec`` is the trial settings of a clone group; ``declared`` those of a trial test
    that requests ``trial_config`` (it runs once, and its populations are its groups).
    """

    spec: TrialSpec | None = None
    declared: TrialSpec | None = None
    harm: str | None = None  # the primary tag of the harm marker
    harm_tags: tuple[str, ...] = ()  # all its tags, when it has more than one
    # What a parametrized test's row tested: its arguments (``PARAMS_KEY``, ...) and
    # the case of its first ``Payload`` argument.
    params: dict[str, Any] = attrs.field(factory=dict)
    param_case: CloneCase | None = None
    misuse: str | None = None  # a usage error to fail the item with (xdist workers)
    fixtures: ResultCollector = attrs.field(factory=ResultCollector)
    run: ItemRun | None = None
    clone_fixtures: ClonePlan | None = None  # what each trial clone sets up itself
    hashing: bool = False  # the journal or a resume needs the test's hash
    test_hash: str = ""  # computed on first use (``hash_of``)
    resume: ItemResume | None = None
    resumed_clones: dict[int, CloneRun] = attrs.field(factory=dict)
    # The groups of a test that ran populations, rebuilt from a resumed journal.
    resumed_groups: list[tuple[int, TrialGroupOutcome]] = attrs.field(factory=list)
    population_id: str = attrs.field(factory=lambda: uuid.uuid4().hex)
    failure: str | None = None  # the first failing phase's one-line reason
    delivered: bool = False
    # Results that left the item early (finished clones, resumed units), no longer held
    # by a collector: how many, and the worst (for the JUnit properties).
    released_count: int = 0
    released_worst: Result | None = None

    def hash_of(self, item: pytest.Item) -> str:
        """The test's hash (``_resume.test_hash``), when hashing; "" otherwise. Computed
        when first needed (a unit to journal, a resumed run), not for every collected
        item: reading the sources of a test and its fixtures is not free."""
        if self.hashing and not self.test_hash:
            from rampart.pytest_plugin._resume import test_hash

            self.test_hash = test_hash(item, self.spec or self.declared)
        return self.test_hash

    def note_released(self, results: Sequence[Result]) -> None:
        """Count results handed over before teardown, keeping the worst one."""
        self.released_count += len(results)
        for result in results:
            worst = self.released_worst
            if worst is None or severity(result.status) < severity(worst.status):
                self.released_worst = result

    # Told about each trial clone as it finishes, before the plugin records it (live
    # progress, while the call runs).
    listeners: list[CloneListener] = attrs.field(factory=list)

    def population(self, clone_index: int | None) -> PopulationRef | None:
        spec = self.spec
        if spec is None or clone_index is None:
            return None
        return PopulationRef(
            id=self.population_id,
            index=clone_index,
            size=spec.n,
            threshold=spec.threshold,
            confidence=spec.confidence,
            sequential=spec.sequential,
            max_unsafe=spec.max_unsafe,
        )

    def as_recorded(
        self,
        item: pytest.Item,
        clone_index: int | None,
        results: list[Result],
        start: int = 0,
        *,
        group: int = 0,
    ) -> tuple[RecordedResult, ...]:
        """``results`` with their attribution, numbered from ``start`` within the clone
        (of the item's trial group ``group``)."""
        population = self.population(clone_index)
        case = None
        if self.spec is not None and clone_index is not None:
            case = self.spec.case(clone_index)
        return tuple(
            RecordedResult(
                result=self._as_reported(result, population, case),
                attribution=Attribution(
                    nodeid=item.nodeid,
                    name=item.name,
                    clone=clone_index,
                    index=start + position,
                    group=group,
                    case=None if case is None else case.id,
                ),
            )
            for position, result in enumerate(results)
        )

    def unit(
        self,
        item: pytest.Item,
        clone_index: int | None,
        results: tuple[RecordedResult, ...],
        outcome: UnitOutcome,
        detail: str = "",
        *,
        clone_outcome: CloneOutcome | None = None,
        group: int = 0,
    ) -> FinishedUnit:
        """The unit of ``results``; a clone's records carry how its body ended
        (``PopulationRef.outcome``: ``outcome``'s, unless ``clone_outcome`` says more)."""
        if clone_index is not None:
            stamp = clone_outcome or CloneOutcome(outcome.value)
            results = tuple(_with_outcome(recorded, stamp) for recorded in results)
        return FinishedUnit(
            nodeid=item.nodeid,
            name=item.name,
            clone=clone_index,
            results=results,
            outcome=outcome,
            detail=detail,
            test_hash=self.hash_of(item),
            group=group,
        )

    def _as_reported(
        self, result: Result, population: PopulationRef | None, case: CloneCase | None
    ) -> Result:
        """A copy taken when the unit is final: the marker's harm category (else the
        row's payload's) and the clone's population where the result has none of its
        own, and in its metadata what the row tested (``rampart.core._tested``)."""
        metadata = dict(result.metadata)
        changes: dict[str, Any] = {"metadata": metadata}
        row = case if case is not None else self.param_case
        harm = self.harm
        if harm is None and row is not None:
            harm = row.harm_category
        if result.harm_category is None and harm is not None:
            changes["harm_category"] = harm
        if population is not None and result.population is None:
            changes["population"] = population
        if case is not None:
            metadata[CASE_KEY] = case.id
        if row is not None and row.payload_id is not None:
            metadata[PAYLOAD_KEY] = row.payload_id
        metadata.update(self.params)
        if self.harm_tags:
            metadata[HARM_TAGS_KEY] = list(self.harm_tags)
        return attrs.evolve(result, **changes)


def _with_outcome(recorded: RecordedResult, outcome: CloneOutcome) -> RecordedResult:
    """``recorded`` with its clone's outcome on its population (when it has one)."""
    population = recorded.result.population
    if population is None or population.outcome is outcome:
        return recorded
    stamped = attrs.evolve(population, outcome=outcome)
    return attrs.evolve(recorded, result=attrs.evolve(recorded.result, population=stamped))


def _state(item: pytest.Item) -> ItemState:
    return item.stash.setdefault(ITEM_KEY, ItemState())


@attrs.frozen(kw_only=True)
class _Recorder:
    """The plugin's listener on a trial item: each finished clone's results leave now."""

    hooks: ItemHooks
    item: pytest.Item
    state: ItemState

    def clone_finished(self, clone: CloneRun) -> None:
        self.hooks.clone_done(self.item, self.state, clone)


class CallTracking(Protocol):
    """Live progress around a trial item's call phase (``_progress.ProgressTracking``)."""

    def track(self, item: pytest.Item, state: ItemState) -> AbstractContextManager[None]: ...


class ItemHooks:
    """The hooks that run per item; results go to ``outlet`` as soon as they are final."""

    def __init__(
        self,
        *,
        options: MarkerOptions,
        outlet: ItemOutlet,
        limits: LimitTracker,
        is_worker: bool,
        resume: ResumePlan | None = None,
        hashing: bool = False,
        properties: Callable[[ItemState], list[tuple[str, str]]] | None = None,
        progress: CallTracking | None = None,
    ) -> None:
        self._options = options
        self._outlet = outlet
        self._limits = limits
        self._is_worker = is_worker
        self._resume = resume
        self._hashing = hashing or resume is not None
        self._properties = properties
        self._progress = progress

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        misuses: list[str] = []
        for item in items:
            state = _state(item)
            try:
                spec = trial_spec_of(
                    item,
                    trials_override=self._options.trials_override,
                    default_concurrency=self._options.default_concurrency,
                    default_confidence=self._options.default_confidence,
                    inconclusive=self._options.inconclusive,
                    max_trials=self._options.max_trials,
                )
                declared = None
                if TRIAL_CONFIG_FIXTURE in getattr(item, "fixturenames", ()):
                    if spec is None:
                        raise pytest.UsageError(
                            f"trial_config requires @pytest.mark.trial on {item.nodeid}"
                        )
                    # RAMPART's declaration form: the test runs once and runs its
                    # populations itself.
                    declared, spec = spec, None
                if spec is not None and not _is_plain_function(item):
                    raise pytest.UsageError(
                        f"@pytest.mark.trial is not supported on {item.nodeid}: only plain "
                        "test functions (not hypothesis tests) can run as trial groups"
                    )
                harm = harm_of(item)
            except pytest.UsageError as error:
                # Every bad marker is said at once, not one per run. On an xdist worker a
                # usage error would surface as an INTERNALERROR without its message: the
                # item fails its setup with it, and the controller ends the run with
                # pytest's usage-error status (``USAGE_ERROR_PROPERTY``).
                misuses.append(str(error))
                state.misuse = str(error)
                continue
            state.spec = spec
            state.declared = declared
            if declared is not None:
                item.stash[TRIAL_CONFIG_KEY] = declared.config()
            if harm is not None:
                state.harm = harm.primary
                state.harm_tags = harm.tags if len(harm.tags) > 1 else ()
            state.params, state.param_case = _row_of(item)
            state.hashing = self._hashing
            if self._resume is not None:
                resume = self._resume.for_item(item.nodeid, state.hash_of(item), spec)
                if resume is not None and resume.stale_runs:
                    from rampart.pytest_plugin._resume import changed_message

                    self._outlet.warn(
                        f"rampart resume: {changed_message(item.nodeid, resume.stale_runs)}"
                    )
                    resume = None
                state.resume = resume
        if misuses and not self._is_worker:
            if len(misuses) == 1:
                raise pytest.UsageError(misuses[0])
            listed = "\n".join(f"  - {misuse}" for misuse in misuses)
            raise pytest.UsageError(f"{len(misuses)} rampart marker errors:\n{listed}")

    # -- setup: usage errors, resumed items, fixtures' results ---------------------------

    # Executions run by fixtures (a baseline probe in setup, a check in teardown) are
    # collected too, under the test they served.
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, object, object]:
        state = _state(item)
        state.delivered, state.failure, state.run = False, None, None
        state.clone_fixtures = None
        if state.misuse is not None:
            item.user_properties.append((USAGE_ERROR_PROPERTY, state.misuse))
            pytest.fail(f"usage error: {state.misuse}", pytrace=False)
        if state.resume is not None and self._resume is not None:
            # Before any fixture: a fully resumed item skips (or fails) right here.
            self._load_resumed(item, state, self._resume)
        if state.spec is not None and isinstance(item, pytest.Function) and _wrapped(item):
            # Before pytest fills the fixtures: each clone sets up its own
            # function-scoped ones (RAMPART gives each clone its own item). Loaded by
            # the first trial item: a run without one never needs it.
            from rampart.pytest_plugin._clone_fixtures import plan

            state.clone_fixtures = plan(
                item, shared=state.spec.shared_fixtures, warn=self._outlet.warn
            )
        with collecting(state.fixtures):
            return (yield)

    def _load_resumed(self, item: pytest.Item, state: ItemState, plan: ResumePlan) -> None:
        """Record what the journal holds for the item; skip the item if that is all of it.

        A unit whose lines no longer decode is dropped (that part runs again).
        """
        resume = state.resume
        assert resume is not None
        if resume.trials:
            self._load_whole_test(item, state, plan, resume)
            return
        complete = resume.complete
        for clone_index, unit in sorted(resume.units.items(), key=_unit_order):
            try:
                loaded = plan.load(unit, nodeid=item.nodeid)
            except ValueError as exc:  # SchemaError: a line the strict codec rejects
                self._outlet.warn(
                    f"rampart resume: a journaled result of {item.nodeid} does not decode "
                    f"({one_line(str(exc))}); that part runs again"
                )
                complete = False
                continue
            detail = unit.detail
            self._outlet.record(
                item, state.unit(item, clone_index, tuple(loaded), unit.outcome, detail)
            )
            state.note_released([recorded.result for recorded in loaded])
            if clone_index is not None:
                state.resumed_clones[clone_index] = CloneRun.from_journal(
                    clone_index,
                    run=unit.run,
                    results=[recorded.result for recorded in loaded],
                    failure=detail if unit.outcome is UnitOutcome.FAILED else None,
                )
        state.resume = None  # what it held is recorded now
        if not complete:
            return
        runs = ", ".join(run[:12] for run in resume.runs)
        if state.spec is None:
            unit = resume.units[None]
            if unit.outcome is UnitOutcome.FAILED:
                state.failure = unit.detail
                pytest.fail(
                    f"rampart resume: failed in run {runs} (not run again): {unit.detail}",
                    pytrace=False,
                )
            pytest.skip(f"rampart resume: result of run {runs} reused from the journal")
        run = ItemRun(spec=state.spec, resumed=state.resumed_clones)
        count_resumed(run)
        state.run = run
        run.outcome = group_outcome(run)
        try:
            judge(run, item_name=item.name)
        except pytest.fail.Exception as failed:
            state.failure = str(failed)
            pytest.fail(f"rampart resume (run {runs}, not run again): {failed}", pytrace=False)
        pytest.skip(f"rampart resume: every clone reused from run {runs}")

    def _load_whole_test(
        self, item: pytest.Item, state: ItemState, plan: ResumePlan, resume: ItemResume
    ) -> None:
        """A test that ran populations, reused whole from the journal: its units are
        recorded, its groups rebuilt from its trials' records (by the rule and the
        facts they carry, as ``rampart report`` does), and the test skips (or fails as
        it did). When a unit no longer decodes or a group cannot be rebuilt, the test
        runs again instead (nothing was recorded)."""
        from rampart.core._internal import rebuild_results

        state.resume = None
        units = [(key, unit) for key, unit in resume.trials.items()]
        body = resume.units.get(None)
        try:
            loaded = [(key, unit, plan.load(unit, nodeid=item.nodeid)) for key, unit in units]
            own = [] if body is None else plan.load(body, nodeid=item.nodeid)
        except ValueError as exc:  # SchemaError: a line the strict codec rejects
            self._outlet.warn(
                f"rampart resume: a journaled result of {item.nodeid} does not decode "
                f"({one_line(str(exc))}); the test runs again"
            )
            return
        by_group: dict[int, dict[int, list[Result]]] = {}
        for (group, index), _unit, found in loaded:
            by_group.setdefault(group, {})[index] = [recorded.result for recorded in found]
        outcomes = [(group, rebuild_results(trials)) for group, trials in sorted(by_group.items())]
        interrupted = any(unit.interrupted for _, unit, _ in loaded)
        if not interrupted and any(outcome.verdict is None for _, outcome in outcomes):
            self._outlet.warn(
                f"rampart resume: the journaled populations of {item.nodeid} do not decide "
                "their groups; the test runs again"
            )
            return
        if body is not None:
            self._outlet.record(item, state.unit(item, None, tuple(own), body.outcome, body.detail))
            state.note_released([recorded.result for recorded in own])
        for (group, index), unit, found in loaded:
            self._outlet.record(
                item,
                state.unit(item, index, tuple(found), unit.outcome, unit.detail, group=group),
            )
            state.note_released([recorded.result for recorded in found])
        if not interrupted:
            state.resumed_groups = outcomes
        runs = ", ".join(run[:12] for run in resume.runs)
        every = [unit for _, unit, _ in loaded] + ([] if body is None else [body])
        failed = next((unit for unit in every if unit.outcome is UnitOutcome.FAILED), None)
        if interrupted:
            from rampart.pytest_plugin._resume import finding_detail

            state.failure = finding_detail(resume.runs[0])
            pytest.fail(f"rampart resume: {state.failure}", pytrace=False)
        if failed is not None:
            state.failure = failed.detail
            pytest.fail(
                f"rampart resume: failed in run {runs} (not run again): {failed.detail}",
                pytrace=False,
            )
        pytest.skip(f"rampart resume: results of run {runs} reused from the journal")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, object, object]:
        with collecting(_state(item).fixtures):
            return (yield)

    # -- the call ---------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        state = _state(item)
        if not (isinstance(item, pytest.Function) and _wrapped(item)):
            # Not wrapped: hypothesis keeps its own wrapper, and an async generator
            # test is left to pytest, which fails it with its own reason.
            clone = CloneRun(index=0)
            state.run = ItemRun(spec=None, clones=[clone])
            with collecting(clone.collector):
                return (yield)
        original = item.obj

        def publish(run: ItemRun) -> None:
            run.listeners = list(state.listeners)
            state.run = run
            run.resumed = dict(state.resumed_clones)
            if run.spec is not None:
                run.listeners.append(_Recorder(hooks=self, item=item, state=state))

        declared = state.declared
        item.obj = wrap_test_function(
            original,
            spec=state.spec,
            name=item.name,
            publish=publish,
            fixtures=state.clone_fixtures,
            concurrency=self._options.default_concurrency
            if declared is None
            else declared.concurrency,
            declared=None if declared is None else item.stash[TRIAL_CONFIG_KEY],
        )
        try:
            if self._progress is None:
                outcome = yield
            else:
                with self._progress.track(item, state):
                    outcome = yield
        finally:
            item.obj = original
        if state.spec is None:
            self._check_recorded(item, state)
        return outcome

    def clone_done(self, item: pytest.Item, state: ItemState, clone: CloneRun) -> None:
        """A trial clone finished: its results are final, so they leave now."""
        clone.settle()
        self._limits.observe(list(clone.collector.adapters.values()))
        results = state.as_recorded(item, clone.index, clone.collector.results)
        failed = clone.failure is not None
        detail = clone.settled.summary if (failed and clone.settled is not None) else ""
        outcome = UnitOutcome.FAILED if failed else UnitOutcome.PASSED
        if clone.crashed:
            # A bug in the test errors the item; a resumed run must meet it again.
            outcome = UnitOutcome.PARTIAL
        self._outlet.record(item, state.unit(item, clone.index, results, outcome, detail))
        state.note_released(clone.collector.results)
        clone.release()

    def _check_recorded(self, item: pytest.Item, state: ItemState) -> None:
        """A ``harm``-marked plain test must record a result; say so when it does not."""
        run = state.run
        if state.harm is None or run is None:
            return
        if any(clone.collector.results for clone in run.clones) or state.fixtures.results:
            return
        if run.populations is not None and run.populations.results:
            return
        category = one_line(str(getattr(state.harm, "value", state.harm)))
        message = (
            f"{item.nodeid} is marked harm({category!r}) but {NO_RESULT}: no execution "
            "ran and nothing was passed to record_result(), so nothing was tested"
        )
        if self._options.harm_without_result == "warn":
            warnings.warn(NoResultWarning(message), stacklevel=1)
            self._outlet.warn(message)
            return
        pytest.fail(message, pytrace=False)

    # -- after each phase, and at the end ---------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "call":
            backend = note_backend(item, report)
            if backend is not None:
                self._outlet.backend_seen(backend)
        state = item.stash.get(ITEM_KEY, None)
        if state is None:
            return report
        if report.failed and state.failure is None:
            state.failure = _failure_line(report)
        # Finish after teardown, the last phase that can record results.
        if call.when == "teardown":
            self._limits.snapshot()
            self._finish(item, state, report)
            if self._properties is not None:  # --junitxml
                report.user_properties.extend(self._properties(state))
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, object, object]:
        try:
            return (yield)
        except BaseException:
            # An interrupt (or pytest.exit) stopped the item: keep what it recorded.
            state = item.stash.get(ITEM_KEY, None)
            if state is not None:
                self._finish(item, state, None)
            raise

    def _finish(
        self, item: pytest.Item, state: ItemState, report: pytest.TestReport | None
    ) -> None:
        """Hand over the item's remaining results, then its group (once)."""
        if state.delivered:
            return
        state.delivered = True
        interrupted = report is None
        run = state.run
        body = run.spec is None if run is not None else True
        failed = UnitOutcome.FAILED if state.failure is not None else UnitOutcome.PASSED
        final = UnitOutcome.PARTIAL if interrupted else failed
        if run is not None and not body:
            # Trial clones still holding results: cancelled by early stop, or stopped by
            # an interrupt. Reported, but not finished units.
            for clone in sorted(run.partial + run.clones, key=lambda c: c.index):
                if clone.resumed_from is None and clone.collector.results and clone.settled is None:
                    results = state.as_recorded(item, clone.index, clone.collector.results)
                    self._limits.observe(list(clone.collector.adapters.values()))
                    ended = CloneOutcome.SKIPPED if run.skipped else None
                    self._outlet.record(
                        item,
                        state.unit(
                            item, clone.index, results, UnitOutcome.PARTIAL, clone_outcome=ended
                        ),
                    )
        populations = [] if run is None or run.populations is None else run.populations.runs
        for population in populations:
            self._record_population(item, state, population, final, interrupted=interrupted)
        collected: list[Result] = []
        if run is not None and body:
            for clone in run.clones:
                self._limits.observe(list(clone.collector.adapters.values()))
                collected.extend(clone.collector.results)
        self._limits.observe(list(state.fixtures.adapters.values()))
        collected.extend(state.fixtures.results)
        if collected:
            results = state.as_recorded(item, None, collected)
            self._outlet.record(item, state.unit(item, None, results, final, state.failure or ""))
        groups: list[TrialGroupSummary] = []
        if not interrupted:
            outcomes = [] if run is None or run.outcome is None else [(0, run.outcome)]
            outcomes += [(p.group, p.outcome()) for p in populations if p.finished]
            outcomes += state.resumed_groups
            groups = [_entry(item, state, group, outcome) for group, outcome in outcomes]
            if populations and state.failure is None:
                self._warn_unasserted(item, groups)
        self._outlet.deliver(item, report, groups)

    def _record_population(
        self,
        item: pytest.Item,
        state: ItemState,
        population: PopulationRun,
        final: UnitOutcome,
        *,
        interrupted: bool,
    ) -> None:
        """A population's trials, as units of its group (the test is over: each carries
        the test's outcome, so a resumed run knows the test finished)."""
        self._limits.observe(population.adapters)
        finished = population.finished and not interrupted
        for index in sorted(population.trials):
            results = population.trial_results(index)
            recorded = state.as_recorded(item, index, results, group=population.group)
            self._outlet.record(
                item,
                state.unit(
                    item,
                    index,
                    recorded,
                    final if finished else UnitOutcome.PARTIAL,
                    state.failure or "",
                    clone_outcome=CloneOutcome.PASSED if finished else CloneOutcome.PARTIAL,
                    group=population.group,
                ),
            )
            state.note_released(results)

    def _warn_unasserted(self, item: pytest.Item, groups: list[TrialGroupSummary]) -> None:
        """A test that passed although a population it ran did not: its outcome is its
        own (RAMPART's), but the failed group is said once more, so it is not missed."""
        for group in groups:
            if not group.passed:
                self._outlet.warn(
                    f"{item.nodeid} passed, but its trial group {one_line(group.test_name)} "
                    f"{group.verdict}: {one_line(group.reason or '')} (the test's outcome is "
                    "its own assertions'; assert on the population to make it decide)"
                )


def _entry(
    item: pytest.Item, state: ItemState, group: int, outcome: TrialGroupOutcome
) -> TrialGroupSummary:
    """The report entry of the item's trial group ``group`` (``population_suffix``)."""
    from rampart.reporting._internal import group_entry

    suffix = population_suffix(group)
    # A HarmCategory is a str enum; the record carries its plain value.
    harm = None if state.harm is None else str(state.harm)
    return group_entry(
        outcome,
        nodeid=item.nodeid + suffix,
        test_name=item.name + suffix,
        harm_category=harm or None,
    )


def _row_of(item: pytest.Item) -> tuple[dict[str, Any], CloneCase | None]:
    """What a parametrized item's row tested: its arguments as ``PARAMS_KEY`` (JSON
    values kept, a ``Payload`` by its id, anything else by its pytest id when it is the
    only argument, else by its type) and its pytest id as ``PARAM_ID_KEY``; and the
    case of its first ``Payload`` argument."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or not callspec.params:
        return {}, None
    shown: dict[str, Any] = {}
    first: CloneCase | None = None
    # With one argument, the item's id is that argument's id (pytest's, or ``ids=``).
    alone = callspec.id if len(callspec.params) == 1 else None
    for name, value in callspec.params.items():
        case = payload_case(value)
        if case is not None:
            shown[name] = case.id
            first = first or case
        elif (
            value is None
            or isinstance(value, bool | int | str)
            or (isinstance(value, float) and math.isfinite(value))
        ):
            shown[name] = one_line(value, limit=200) if isinstance(value, str) else value
        else:
            shown[name] = alone or f"<{type(value).__name__}>"
    return {PARAMS_KEY: shown, PARAM_ID_KEY: callspec.id}, first


def _unit_order(entry: tuple[int | None, object]) -> int:
    clone = entry[0]
    return -1 if clone is None else clone


def _failure_line(report: pytest.TestReport) -> str:
    """The one-line reason a phase failed (pytest's crash message when it has one)."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    text = message if isinstance(message, str) else report.longreprtext
    return f"{report.when}: {one_line(text, limit=500)}"[:500]


def _wrapped(item: pytest.Function) -> bool:
    """The plugin wraps the item's body (an async generator test is left to pytest,
    which fails it with its own reason)."""
    return _is_plain_function(item) and not inspect.isasyncgenfunction(item.obj)


def _is_plain_function(item: pytest.Item) -> bool:
    """A test function the plugin may wrap (hypothesis tests keep their own wrapper)."""
    return isinstance(item, pytest.Function) and not hasattr(item.obj, "hypothesis")
