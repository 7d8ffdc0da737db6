"""Running one test item's body: once, or as a concurrent trial group of clones.

The plugin replaces each test function with a wrapper built here. The wrapper runs
the original body inside a collection context; for ``@pytest.mark.trial`` items it
runs the clones concurrently in one task group under a ``CapacityLimiter``, each
clone with its own collector and ``TrialInfo``. Clone failures are captured, not
propagated, so one failing clone does not stop the others; when the clones are done
the group verdict is computed (once) and decides the call's outcome. With early stop
(``early_stop=True`` or ``sequential=True``) clones count in index order: the group
stops once the clones counted so far settle its verdict, and clones above the deciding
one that finished anyway are reported but not counted. Async wrappers
stay coroutine functions, so whichever async test plugin owns the item (anyio's, or
pytest-asyncio's) runs them.

A test body that is not a clone group runs with the run's concurrency setting declared
(``--rampart-concurrency``, or for a test that requests ``trial_config`` its marker's),
its declared ``TrialConfig`` and a ``PopulationRecorder`` watching the populations it
runs (``rampart.engine._populations``), so each is reported as a trial group. Clones
run with the run's setting only: a population inside a clone is that clone's results.

Each clone that finishes is handed to ``ItemRun.listeners`` at once (the plugin
records its results and journals them), so an interrupted or killed run keeps every
finished clone. Clones a run journal already holds (``ItemRun.resumed``) are not run.

A ``KeyboardInterrupt`` anywhere in the body (a clone's own code, the engine, an
exception group around it) ends the item as a bare ``KeyboardInterrupt``, which pytest
turns into an interrupted session; it is never a test failure. An execution the body
created but never ran (a forgotten ``await``) fails the body.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest

from rampart._pacing import DEFAULT_CONCURRENCY, run_concurrency
from rampart.core.result import SafetyStatus
from rampart.engine._internal import (
    ResultCollectionHandler,
    ResultCollector,
    TrialInfo,
    bind_collector,
    current_framework_handlers,
    declaring_trials,
    framework_handlers,
    never_started,
    observing_populations,
    tracking_executions,
)
from rampart.pytest_plugin._groups import (
    CloneCancelled,
    CloneNotRun,
    CloneRun,
    ItemRun,
    clone_name,
    clone_settles,
    count_clones,
    group_outcome,
    judge,
    settle_known,
)
from rampart.pytest_plugin._populations import PopulationRecorder

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

    from rampart._pacing import Setting
    from rampart.engine._internal import BaseExecution, TrialConfig
    from rampart.pytest_plugin._clone_fixtures import ClonePlan
    from rampart.pytest_plugin._markers import TrialSpec

__all__ = ["NEVER_AWAITED", "collecting", "wrap_test_function"]

# Outcomes that end the whole item rather than one clone.
_ITEM_OUTCOMES = (pytest.skip.Exception, pytest.xfail.Exception, pytest.exit.Exception)
# Outcomes that would report a test as not failed: a recorded UNSAFE overrides them.
_SKIPS = (pytest.skip.Exception, pytest.xfail.Exception)

NEVER_AWAITED = "execution created but never awaited"

_HANDLER = ResultCollectionHandler()


@contextmanager
def collecting(collector: ResultCollector, trial: TrialInfo | None = None) -> Iterator[None]:
    """Route results of executions run in this context to ``collector``."""
    with bind_collector(collector, trial):
        if _HANDLER in current_framework_handlers():
            # Nested (a clone inside a test): the installed handler already reads the
            # innermost collector, and a second copy would record every result twice.
            yield
        else:
            with framework_handlers(_HANDLER):
                yield


def wrap_test_function(
    func: Callable[..., Any],
    *,
    spec: TrialSpec | None,
    name: str,
    publish: Callable[[ItemRun], None],
    fixtures: ClonePlan | None = None,
    concurrency: Setting = DEFAULT_CONCURRENCY,
    declared: TrialConfig | None = None,
) -> Callable[..., Any]:
    """A replacement for ``func`` that collects results and fans out trial clones.

    ``publish`` receives the ``ItemRun`` before the body starts, so results survive a
    failing body; it may fill in ``resumed`` and ``listeners``. A trial group that
    fails its verdict fails the call (``judge``). ``fixtures`` are the function-scoped
    fixtures each clone sets up for itself (``_clone_fixtures``). ``concurrency`` is
    the setting populations run inside the test take by default, ``declared`` what a
    test that requests ``trial_config`` declared (see the module docstring).
    """
    if fixtures is not None and fixtures.empty:
        fixtures = None
    context = _TestContext(concurrency=concurrency, declared=declared)
    if inspect.iscoroutinefunction(func):
        return _wrap_async(
            func, spec=spec, name=name, publish=publish, fixtures=fixtures, context=context
        )
    return _wrap_sync(
        func, spec=spec, name=name, publish=publish, fixtures=fixtures, context=context
    )


class _TestContext:
    """What a test body runs with (see the module docstring)."""

    def __init__(self, *, concurrency: Setting, declared: TrialConfig | None) -> None:
        self.concurrency = concurrency
        self.declared = declared

    @contextmanager
    def body(self, run: ItemRun) -> Iterator[None]:
        """Around a body that is not a clone group's: its populations are watched."""
        run.populations = PopulationRecorder()
        with (
            run_concurrency(self.concurrency),
            declaring_trials(self.declared),
            observing_populations(run.populations),
        ):
            yield

    @contextmanager
    def clones(self) -> Iterator[None]:
        """Around a clone group: the run's setting only."""
        with run_concurrency(self.concurrency):
            yield


def _unawaited_message(executions: list[BaseExecution]) -> str:
    kinds = sorted({type(execution).__name__ for execution in executions})
    return (
        f"{NEVER_AWAITED}: {len(executions)} execution(s) ({', '.join(kinds)}) built in "
        "this test never ran; did you forget `await` before execute_async(...)?"
    )


@contextmanager
def _clone(run: ItemRun, index: int) -> Iterator[CloneRun]:
    """One run of the body, collecting its results.

    In a trial group a failing body is recorded on the clone (judged later with the
    group) instead of propagating; outcomes that end the whole item still propagate.
    A body that created an execution and never ran it fails with ``NEVER_AWAITED``.
    """
    clone = CloneRun(index=index)
    run.clones.append(clone)
    trial = None if run.spec is None else TrialInfo(index=index, n=run.spec.n)
    with collecting(clone.collector, trial), tracking_executions() as created:
        if run.spec is None:
            yield clone
            _check_started(created)
            return
        try:
            yield clone
            _check_started(created)
        except _ITEM_OUTCOMES:
            raise
        # pytest.fail() raises a BaseException; in a clone it fails that clone only.
        except (Exception, pytest.fail.Exception) as exc:  # recorded, judged later
            clone.failure = exc
    clone.finished = True
    # A finished clone (one cancelled by early stop never gets here): live progress
    # first (it reads the results), then the plugin records them and lets them go.
    _tell(run, clone)


def _tell(run: ItemRun, clone: CloneRun) -> None:
    for listener in run.listeners:
        listener.clone_finished(clone)


def _check_started(created: list[BaseExecution]) -> None:
    unstarted = never_started(created)
    created.clear()
    if unstarted:
        pytest.fail(_unawaited_message(unstarted), pytrace=False)


def _decide(run: ItemRun, *, name: str) -> None:
    """The group's clones are done: compute its verdict once and let it decide the call."""
    run.outcome = group_outcome(run)
    judge(run, item_name=name)


def _interrupt_in(group: BaseExceptionGroup[BaseException]) -> KeyboardInterrupt | None:
    """The first ``KeyboardInterrupt`` inside ``group`` (at any depth), if any."""
    match, _ = group.split(KeyboardInterrupt)
    if match is None:
        return None
    leaf = _first_leaf(match)
    return leaf if isinstance(leaf, KeyboardInterrupt) else KeyboardInterrupt()


@contextmanager
def _interrupts_stop_the_item(run: ItemRun) -> Iterator[None]:
    """A KeyboardInterrupt anywhere below, even inside an exception group, is re-raised
    bare (pytest then ends the session), and the run is marked interrupted."""
    try:
        yield
    except KeyboardInterrupt:
        run.interrupted = True
        raise
    except BaseExceptionGroup as group:
        interrupt = _interrupt_in(group)
        if interrupt is None:
            raise
        run.interrupted = True
        raise interrupt from None


def _unsafe_findings(run: ItemRun) -> list[CloneRun]:
    """Clones (finished, partial or resumed) that recorded an UNSAFE result."""
    found = []
    for clone in [*run.resumed.values(), *run.clones, *run.partial]:
        status = clone.settled.status if clone.settled is not None else None
        if status is SafetyStatus.UNSAFE or any(
            result.status is SafetyStatus.UNSAFE for result in clone.collector.results
        ):
            found.append(clone)
    return found


def _item_outcome_with_findings(
    run: ItemRun, outcome: BaseException, *, name: str
) -> BaseException:
    """A clone (or a plain test's body) skipped or xfailed the item. UNSAFE findings
    still fail it: a skip must not hide a recorded attack success."""
    if not isinstance(outcome, pytest.exit.Exception):
        run.skipped = True
    unsafe = _unsafe_findings(run)
    # The trials of the populations the test ran are its results too.
    populations = [] if run.populations is None else run.populations.results
    count = sum(
        result.status is SafetyStatus.UNSAFE
        for result in [*populations, *(r for clone in unsafe for r in clone.collector.results)]
    )
    if not (unsafe or count) or isinstance(outcome, pytest.exit.Exception):
        return outcome
    kind = "xfail" if isinstance(outcome, pytest.xfail.Exception) else "skip"
    if run.spec is None:
        return pytest.fail.Exception(
            f"{count} UNSAFE result(s) recorded before the test called pytest.{kind}(); "
            f"a {kind} never hides a recorded attack success, so the test fails",
            pytrace=False,
        )
    indices = ", ".join(clone_name(run, name, clone.index) for clone in unsafe[:3])
    more = f" and {len(unsafe) - 3} more" if len(unsafe) > 3 else ""
    message = (
        f"trial group failed: {len(unsafe)} clone(s) recorded UNSAFE results "
        f"({indices}{more}) before a clone called pytest.{kind}(); "
        "UNSAFE findings fail the group whatever the other clones did"
    )
    return pytest.fail.Exception(message, pytrace=False)


def _wrap_async(
    func: Callable[..., Awaitable[Any]],
    *,
    spec: TrialSpec | None,
    name: str,
    publish: Callable[[ItemRun], None],
    fixtures: ClonePlan | None,
    context: _TestContext,
) -> Callable[..., Awaitable[None]]:
    @functools.wraps(func)
    async def run_item(**kwargs: Any) -> None:
        run = ItemRun(spec=spec)
        publish(run)
        if spec is None:
            try:
                with _interrupts_stop_the_item(run), _clone(run, 0), context.body(run):
                    await func(**kwargs)
            except _SKIPS as skipped:
                raise _item_outcome_with_findings(run, skipped, name=name) from None
            return
        todo = [index for index in range(spec.n) if index not in run.resumed]
        # The trial machinery loads with the first trial group, not at pytest start.
        from rampart.engine._internal import bound, fan_out

        # Turns each clone ran (its latency's units, for concurrency="auto"), taken
        # before the plugin lets the clone's results go.
        turns: dict[int, int] = {}

        async def run_clone(position: int) -> CloneRun:
            with _clone(run, todo[position]) as clone:
                own = None if fixtures is None else fixtures.for_clone(clone.collector)
                try:
                    bound = kwargs if own is None else await own.setup(kwargs)
                    if bound is not None:  # None: a fixture failed or skipped the clone
                        await func(**bound)
                    elif own is not None and own.not_run is not None:
                        clone.failure = own.not_run
                finally:
                    if own is not None:
                        await own.teardown()
                    if controller is not None:
                        _observe_clone(clone, turns)
            return clone

        def clone_settled(_position: int, clone: CloneRun) -> bool:
            # fan_out calls this in index order, whatever order the clones finish in.
            return clone_settles(run, clone)

        # Clones not run: those early stop cancelled, or all when the clones a run
        # journal supplied settle the group already.
        missing = len(todo)
        if spec.stops_early and settle_known(run):
            todo = []
        limiter, controller = bound(spec.concurrency, jobs=len(todo))
        try:
            with _interrupts_stop_the_item(run), context.clones():
                outcome = await fan_out(
                    run_clone,
                    count=len(todo),
                    limiter=limiter,
                    settled=clone_settled if spec.stops_early else None,
                    controller=controller,
                    units=lambda clone: turns.get(clone.index),
                )
        except BaseExceptionGroup as group:
            # A clone skipped or xfailed the item: pytest understands the outcome
            # itself, not a task group's exception group around it.
            _, rest = group.split(_ITEM_OUTCOMES)
            if rest is None:
                raise _item_outcome_with_findings(run, _first_leaf(group), name=name) from None
            raise
        run.concurrency = outcome.concurrency
        finished = {todo[position] for position, _ in outcome.completed}
        if not outcome.settled:
            _judge_foreign_cancellations(run, todo, finished)
        late = [clone for _position, clone in outcome.late]
        cancelled = missing - len(finished) - len(late)
        _finish_group(run, finished, cancelled=cancelled, late=late, name=name)

    return run_item


def _observe_clone(clone: CloneRun, turns: dict[int, int]) -> None:
    """What an adaptive group learns from a finished clone: its turns (its latency's
    units; a clone that recorded none counts as one unit of its wall time). Rate-limit
    refusals reach the group on the "slow down" channel as they happen."""
    results = clone.collector.results
    turns[clone.index] = max(1, sum(len(result.turns) for result in results))


def _judge_foreign_cancellations(run: ItemRun, todo: list[int], finished: set[int]) -> None:
    """Early stop did not ask any clone to stop, yet some did not finish: a clone's own
    code raised a cancellation (and on asyncio it can take the clones not yet started
    with it). They are failed clones, counted against the pass rate, never reported as
    "not run (early stop)"."""
    started = {clone.index: clone for clone in run.clones}
    for index in todo:
        if index in finished:
            continue
        clone = started.get(index)
        if clone is None:
            clone = CloneRun(index=index)
            run.clones.append(clone)
            why = "the clone never started: a cancellation early stop did not request stopped it"
        else:
            why = "the clone ended with a cancellation that early stop did not request"
        clone.failure = CloneCancelled(why)
        clone.finished = True
        finished.add(index)
        _tell(run, clone)


def _finish_group(
    run: ItemRun, finished: set[int], *, cancelled: int, late: list[CloneRun], name: str
) -> None:
    """Sort the clones into counted and partial, then decide the group.

    Clones cancelled by early stop, and those that finished after the deciding clone
    (``late``; resumed ones above it too), do not count in the verdict, but what they
    recorded is still reported.
    """
    run.partial = sorted(
        (c for c in run.clones if c.index not in finished and c.collector.results),
        key=_index,
    )
    ran = [c for c in run.clones if c.index in finished]
    not_run = _nothing_ran(run, ran)
    if not_run is not None:
        raise _item_outcome_with_findings(run, not_run, name=name)
    count_clones(run, [*run.resumed.values(), *ran], late)
    run.cancelled = cancelled
    _decide(run, name=name)


def _nothing_ran(run: ItemRun, ran: list[CloneRun]) -> BaseException | None:
    """When every clone that finished was skipped (or xfailed) by its own fixture and
    no run journal supplied any, nothing was tested: the item is skipped (xfailed) as
    pytest skips a test whose fixture skips (a fixture that skips without an API key,
    say). The outcome to raise, or ``None``: some clone ran, and a skipped one counts
    as a clone that recorded nothing."""
    reasons = [clone.failure for clone in sorted(ran, key=_index)]
    if run.resumed or not reasons or not all(isinstance(r, CloneNotRun) for r in reasons):
        return None
    first = reasons[0]
    assert isinstance(first, CloneNotRun)
    return first.outcome  # pytest.skip's (or xfail's) own exception: its line and reason


def _wrap_sync(
    func: Callable[..., Any],
    *,
    spec: TrialSpec | None,
    name: str,
    publish: Callable[[ItemRun], None],
    fixtures: ClonePlan | None,
    context: _TestContext,
) -> Callable[..., Any]:
    @functools.wraps(func)
    def run_item(**kwargs: Any) -> Any:
        run = ItemRun(spec=spec)
        publish(run)
        if spec is None:
            try:
                with _interrupts_stop_the_item(run), _clone(run, 0), context.body(run):
                    # Returned, so pytest judges what the body returned (a coroutine
                    # from a sync test fails, as it does without rampart).
                    return func(**kwargs)
            except _SKIPS as skipped:
                raise _item_outcome_with_findings(run, skipped, name=name) from None
        # A synchronous body cannot run concurrently; its clones run one after another,
        # each in a fresh copy of the context.
        todo = [index for index in range(spec.n) if index not in run.resumed]
        missing = len(todo)
        if spec.stops_early and settle_known(run):
            todo = []
        finished: set[int] = set()
        try:
            with _interrupts_stop_the_item(run), context.clones():
                for index in todo:
                    clone: CloneRun = contextvars.copy_context().run(
                        _run_sync_clone, func, kwargs, run, index, fixtures
                    )
                    finished.add(index)
                    if spec.stops_early and clone_settles(run, clone):
                        break
        except _ITEM_OUTCOMES as outcome:
            raise _item_outcome_with_findings(run, outcome, name=name) from None
        _finish_group(run, finished, cancelled=missing - len(finished), late=[], name=name)
        return None

    return run_item


def _run_sync_clone(
    func: Callable[..., Any],
    kwargs: dict[str, Any],
    run: ItemRun,
    index: int,
    fixtures: ClonePlan | None,
) -> CloneRun:
    with _clone(run, index) as clone:
        own = None if fixtures is None else fixtures.for_clone(clone.collector)
        try:
            bound = kwargs if own is None else own.setup_sync(kwargs)
            if bound is not None:  # None: a fixture failed or skipped the clone
                func(**bound)
            elif own is not None and own.not_run is not None:
                clone.failure = own.not_run
        finally:
            if own is not None:
                own.teardown_sync()
    return clone


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


def _index(clone: CloneRun) -> int:
    return clone.index
