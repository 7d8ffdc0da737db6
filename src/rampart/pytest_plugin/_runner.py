"""Running one test item's body: once, or as a concurrent trial group of clones.

The plugin replaces each test function with a wrapper built here. The wrapper runs
the original body inside a collection context; for ``@pytest.mark.trial`` items it
runs ``n`` clones concurrently in one task group under a ``CapacityLimiter``, each
clone with its own collector and ``TrialInfo``. Clone failures are captured, not
propagated, so one failing clone does not stop the others; when the clones are done
the group verdict is computed (once) and decides the call's outcome. With early stop
(``early_stop=True`` or ``sequential=True``) clones count in index order: the group
stops once the clones counted so far settle its verdict, and clones above the deciding
one that finished anyway are reported but not counted. Async wrappers
stay coroutine functions, so whichever async test plugin owns the item (anyio's, or
pytest-asyncio's) runs them.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from rampart.core.result import SafetyStatus
from rampart.engine._execution import current_framework_handlers, framework_handlers
from rampart.engine._fanout import fan_out
from rampart.pytest_plugin._collect import (
    ResultCollectionHandler,
    ResultCollector,
    TrialInfo,
    bind_collector,
)
from rampart.pytest_plugin._groups import (
    CloneRun,
    GroupVerdict,
    ItemRun,
    clone_settles,
    clone_status,
    judge,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

    from rampart.pytest_plugin._markers import TrialSpec

__all__ = ["collecting", "wrap_test_function"]

# Outcomes that end the whole item rather than one clone.
_ITEM_OUTCOMES = (pytest.skip.Exception, pytest.xfail.Exception, pytest.exit.Exception)

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
) -> Callable[..., Any]:
    """A replacement for ``func`` that collects results and fans out trial clones.

    ``publish`` receives the ``ItemRun`` before the body starts, so results survive a
    failing body. A trial group that fails its verdict fails the call (``judge``).
    """
    if inspect.iscoroutinefunction(func):
        return _wrap_async(func, spec=spec, name=name, publish=publish)
    return _wrap_sync(func, spec=spec, name=name, publish=publish)


@contextmanager
def _clone(run: ItemRun, index: int) -> Iterator[CloneRun]:
    """One run of the body, collecting its results.

    In a trial group a failing body is recorded on the clone (judged later with the
    group) instead of propagating; outcomes that end the whole item still propagate.
    """
    clone = CloneRun(index=index)
    run.clones.append(clone)
    trial = None if run.spec is None else TrialInfo(index=index, n=run.spec.n)
    with collecting(clone.collector, trial):
        if run.spec is None:
            yield clone
            return
        try:
            yield clone
        except _ITEM_OUTCOMES:
            raise
        # pytest.fail() raises a BaseException; in a clone it fails that clone only.
        except (Exception, pytest.fail.Exception) as exc:  # recorded, judged later
            clone.failure = exc
    # A finished clone (one cancelled by early stop never gets here).
    if run.on_clone_done is not None:
        run.on_clone_done(clone)


def _decide(run: ItemRun, *, name: str) -> None:
    """The group's clones are done: compute its verdict once and let it decide the call."""
    run.verdict = GroupVerdict.of(run)
    judge(run, item_name=name)


def _wrap_async(
    func: Callable[..., Awaitable[Any]],
    *,
    spec: TrialSpec | None,
    name: str,
    publish: Callable[[ItemRun], None],
) -> Callable[..., Awaitable[None]]:
    @functools.wraps(func)
    async def run_item(**kwargs: Any) -> None:
        run = ItemRun(spec=spec)
        publish(run)
        if spec is None:
            with _clone(run, 0):
                await func(**kwargs)
            return

        async def run_clone(index: int) -> CloneRun:
            with _clone(run, index) as clone:
                await func(**kwargs)
            return clone

        def clone_settled(_index: int, clone: CloneRun) -> bool:
            # fan_out calls this in index order, whatever order the clones finish in.
            return clone_settles(run, clone)

        try:
            outcome = await fan_out(
                run_clone,
                count=spec.n,
                limiter=anyio.CapacityLimiter(spec.concurrency),
                settled=clone_settled if spec.stops_early else None,
            )
        except BaseExceptionGroup as group:
            # A clone skipped or xfailed the item: pytest understands the outcome
            # itself, not a task group's exception group around it.
            _, rest = group.split(_ITEM_OUTCOMES)
            if rest is None:
                raise _first_leaf(group) from None
            raise
        finished = {index for index, _ in outcome.completed}
        # Clones cancelled by early stop, and those that finished after the deciding
        # clone, do not count in the verdict, but what they recorded is still reported.
        run.partial = sorted(
            (c for c in run.clones if c.index not in finished and c.collector.results),
            key=_index,
        )
        run.clones = sorted((c for c in run.clones if c.index in finished), key=_index)
        run.cancelled = outcome.cancelled_count
        run.late = len(outcome.late)
        run.late_unsafe = sum(
            clone_status(clone) is SafetyStatus.UNSAFE for _index, clone in outcome.late
        )
        _decide(run, name=name)

    return run_item


def _wrap_sync(
    func: Callable[..., Any],
    *,
    spec: TrialSpec | None,
    name: str,
    publish: Callable[[ItemRun], None],
) -> Callable[..., None]:
    @functools.wraps(func)
    def run_item(**kwargs: Any) -> None:
        run = ItemRun(spec=spec)
        publish(run)
        if spec is None:
            with _clone(run, 0):
                func(**kwargs)
            return
        # A synchronous body cannot run concurrently; its clones run one after another,
        # each in a fresh copy of the context.
        for index in range(spec.n):
            clone: CloneRun = contextvars.copy_context().run(
                _run_sync_clone, func, kwargs, run, index
            )
            if spec.stops_early and clone_settles(run, clone):
                run.cancelled = spec.n - index - 1
                break
        _decide(run, name=name)

    return run_item


def _run_sync_clone(
    func: Callable[..., Any], kwargs: dict[str, Any], run: ItemRun, index: int
) -> CloneRun:
    with _clone(run, index) as clone:
        func(**kwargs)
    return clone


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


def _index(clone: CloneRun) -> int:
    return clone.index
