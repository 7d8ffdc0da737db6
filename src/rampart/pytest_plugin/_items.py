"""Per-item hooks: read the markers, run the body (or its trial clones), hand over results.

Each item carries one ``ItemState`` in its stash: its trial settings and harm
category (read at collection), a usage error to report in setup, the collector for
what its fixtures record, and the ``ItemRun`` its call produced. After teardown --
the last phase that can record results -- the item's results become
``RecordedResult`` entries with their attribution, and go, with the trial group's
record, to the process's ``ItemOutlet``: the run ledger, or on an xdist worker the
test report.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import pytest

from rampart.core._population import PopulationRef
from rampart.pytest_plugin._collect import ResultCollector
from rampart.pytest_plugin._groups import CloneRun, ItemRun
from rampart.pytest_plugin._ledger import Attribution, GroupRecord, RecordedResult
from rampart.pytest_plugin._markers import TrialSpec, harm_category_of, trial_spec_of
from rampart.pytest_plugin._runner import collecting, wrap_test_function

if TYPE_CHECKING:
    from collections.abc import Generator

    from rampart.core.result import Result
    from rampart.pytest_plugin._limits import LimitTracker
    from rampart.pytest_plugin._options import Options

__all__ = ["ITEM_KEY", "ItemHooks", "ItemOutlet", "ItemState"]

ITEM_KEY = pytest.StashKey["ItemState"]()


class ItemOutlet(Protocol):
    """Where an item's finished results go (the ledger, or an xdist worker's report)."""

    def deliver(
        self,
        item: pytest.Item,
        report: pytest.TestReport,
        results: list[RecordedResult],
        group: GroupRecord | None,
    ) -> None: ...


@attrs.define(eq=False)
class ItemState:
    """What the plugin knows about one item, kept in its stash."""

    spec: TrialSpec | None = None
    harm: str | None = None
    misuse: str | None = None  # a usage error to fail the item with (xdist workers)
    fixtures: ResultCollector = attrs.field(factory=ResultCollector)
    run: ItemRun | None = None
    # Called with each trial clone as it finishes (live progress), when set.
    clone_listener: Callable[[CloneRun], None] | None = None

    def finish(
        self, item: pytest.Item, limits: LimitTracker
    ) -> tuple[list[RecordedResult], GroupRecord | None]:
        """The item's results with their attribution, and its trial group's record.

        Fixture results belong to the test itself (no clone, no population); in a plain
        test they follow the body's results.
        """
        spec = None if self.run is None else self.run.spec
        sources: list[tuple[int | None, ResultCollector]] = []
        if self.run is not None:
            for clone in [*self.run.clones, *self.run.partial]:
                sources.append((None if spec is None else clone.index, clone.collector))
        sources.append((None, self.fixtures))
        population_id = uuid.uuid4().hex
        positions: dict[int | None, int] = {}
        recorded: list[RecordedResult] = []
        for clone_index, collector in sources:
            limits.observe(list(collector.adapters.values()))
            population = None
            if spec is not None and clone_index is not None:
                population = PopulationRef(
                    id=population_id, index=clone_index, size=spec.n, threshold=spec.threshold
                )
            for result in collector.results:
                position = positions.get(clone_index, 0)
                positions[clone_index] = position + 1
                recorded.append(
                    RecordedResult(
                        result=self._as_reported(result, population),
                        attribution=Attribution(
                            nodeid=item.nodeid, name=item.name, clone=clone_index, index=position
                        ),
                    )
                )
        group = None
        if self.run is not None and self.run.verdict is not None:
            # A HarmCategory is a str enum; the record carries its plain value.
            harm = None if self.harm is None else str(self.harm)
            group = GroupRecord(
                nodeid=item.nodeid, name=item.name, verdict=self.run.verdict, harm=harm
            )
        return recorded, group

    def _as_reported(self, result: Result, population: PopulationRef | None) -> Result:
        """A copy taken when the test is over, with the marker's harm category and the
        clone's population where the result has none of its own."""
        changes: dict[str, Any] = {"metadata": dict(result.metadata)}
        if result.harm_category is None and self.harm is not None:
            changes["harm_category"] = self.harm
        if population is not None and result.population is None:
            changes["population"] = population
        return attrs.evolve(result, **changes)


def _state(item: pytest.Item) -> ItemState:
    return item.stash.setdefault(ITEM_KEY, ItemState())


class ItemHooks:
    """The hooks that run per item; results go to ``outlet`` after teardown."""

    def __init__(
        self,
        *,
        options: Options,
        outlet: ItemOutlet,
        limits: LimitTracker,
        is_worker: bool,
    ) -> None:
        self._options = options
        self._outlet = outlet
        self._limits = limits
        self._is_worker = is_worker

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            state = _state(item)
            try:
                spec = trial_spec_of(
                    item,
                    trials_override=self._options.trials_override,
                    default_concurrency=self._options.default_concurrency,
                    default_confidence=self._options.default_confidence,
                    inconclusive=self._options.inconclusive,
                )
                if spec is not None and not _is_plain_function(item):
                    raise pytest.UsageError(
                        f"@pytest.mark.trial is not supported on {item.nodeid}: only plain "
                        "test functions (not hypothesis tests) can run as trial groups"
                    )
                harm = harm_category_of(item)
            except pytest.UsageError as error:
                if not self._is_worker:
                    raise
                # On an xdist worker a usage error would surface as an INTERNALERROR
                # without its message; fail the item with the message instead.
                state.misuse = str(error)
                continue
            state.spec = spec
            state.harm = harm

    # Executions run by fixtures (a baseline probe in setup, a check in teardown) are
    # collected too, under the test they served.
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, object, object]:
        state = _state(item)
        if state.misuse is not None:
            pytest.fail(f"usage error: {state.misuse}", pytrace=False)
        with collecting(state.fixtures):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, object, object]:
        with collecting(_state(item).fixtures):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        state = _state(item)
        if not (isinstance(item, pytest.Function) and _is_plain_function(item)):
            clone = CloneRun(index=0)
            state.run = ItemRun(spec=None, clones=[clone])
            with collecting(clone.collector):
                return (yield)
        original = item.obj

        def publish(run: ItemRun) -> None:
            run.on_clone_done = state.clone_listener
            state.run = run

        item.obj = wrap_test_function(original, spec=state.spec, name=item.name, publish=publish)
        try:
            return (yield)
        finally:
            item.obj = original

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        # Finish after teardown, the last phase that can record results.
        if call.when == "teardown":
            self._limits.snapshot()
            state = item.stash.get(ITEM_KEY, None)
            if state is not None and (state.run is not None or state.fixtures.results):
                results, group = state.finish(item, self._limits)
                self._outlet.deliver(item, report, results, group)
        return report


def _is_plain_function(item: pytest.Item) -> bool:
    """A test function the plugin may wrap (hypothesis tests keep their own wrapper)."""
    return isinstance(item, pytest.Function) and not hasattr(item.obj, "hypothesis")
