"""Running one test item's body: once, or as a concurrent trial group of clones.

The plugin replaces each test function with a wrapper built here. The wrapper runs
the original body inside a collection context; for ``@pytest.mark.trial`` items it
runs ``n`` clones concurrently in one task group under a ``CapacityLimiter``, each
clone with its own collector and ``TrialInfo``. Clone failures are captured, not
propagated, so one failing clone does not stop the others; the group verdict is
decided afterwards by the plugin. Async wrappers stay coroutine functions, so
whichever async test plugin owns the item (anyio's, or pytest-asyncio's) runs them.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import anyio
import attrs
import pytest

from rampart.core._stats import StatusTally
from rampart.engine._fanout import fan_out
from rampart.pytest_plugin._collect import ResultCollector, TrialInfo, collecting
from rampart.pytest_plugin._groups import judge, settled_fail
from rampart.pytest_plugin._markers import TrialSpec

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

__all__ = ["CloneRun", "ItemRun", "wrap_test_function"]

# Outcomes that end the whole item rather than one clone.
_ITEM_OUTCOMES = (pytest.skip.Exception, pytest.xfail.Exception, pytest.exit.Exception)


@attrs.define(eq=False)
class CloneRun:
    """One run of the test body: its results and how the body ended."""

    index: int
    collector: ResultCollector = attrs.field(factory=ResultCollector)
    failure: BaseException | None = None


@attrs.define(eq=False)
class ItemRun:
    """What running one item produced; read by the plugin after the call phase."""

    spec: TrialSpec | None
    clones: list[CloneRun] = attrs.field(factory=list)
    cancelled: int = 0
    finished: bool = False
    tally: StatusTally | None = None  # early-stop bookkeeping, fed one clone at a time
    partial: list[CloneRun] = attrs.field(factory=list)  # cancelled, but recorded results


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
            try:
                with _clone(run, 0):
                    await func(**kwargs)
            finally:
                run.finished = True
            return

        async def run_clone(index: int) -> CloneRun:
            with _clone(run, index) as clone:
                await func(**kwargs)
            return clone

        def clone_settled(_index: int, clone: CloneRun) -> bool:
            return settled_fail(run, clone)

        try:
            outcome = await fan_out(
                run_clone,
                count=spec.n,
                limiter=anyio.CapacityLimiter(spec.concurrency),
                settled=clone_settled if spec.early_stop else None,
            )
        except BaseExceptionGroup as group:
            # A clone skipped or xfailed the item: pytest understands the outcome
            # itself, not a task group's exception group around it.
            _, rest = group.split(_ITEM_OUTCOMES)
            if rest is None:
                raise _first_leaf(group) from None
            raise
        finished = {index for index, _ in outcome.completed}
        # Clones cancelled by early stop do not count in the verdict, but what they
        # recorded before the cancellation is still reported.
        run.partial = sorted(
            (c for c in run.clones if c.index not in finished and c.collector.results),
            key=_index,
        )
        run.clones = sorted((c for c in run.clones if c.index in finished), key=_index)
        run.cancelled = outcome.cancelled_count
        run.finished = True
        judge(run, item_name=name)

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
            try:
                with _clone(run, 0):
                    func(**kwargs)
            finally:
                run.finished = True
            return
        # A synchronous body cannot run concurrently; its clones run one after another,
        # each in a fresh copy of the context.
        for index in range(spec.n):
            clone: CloneRun = contextvars.copy_context().run(
                _run_sync_clone, func, kwargs, run, index
            )
            if spec.early_stop and settled_fail(run, clone):
                run.cancelled = spec.n - index - 1
                break
        run.finished = True
        judge(run, item_name=name)

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
