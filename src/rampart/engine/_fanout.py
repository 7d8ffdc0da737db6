"""Bounded concurrent fan-out with an early-stop settlement predicate, in index order.

The one piece both ``execute_trials_async`` and the pytest plugin's in-item trials use
to run ``count`` indexed jobs concurrently. It knows nothing about executions or
verdicts: it runs an async callable per index under a ``CapacityLimiter`` in a single
task group and, when the caller's ``settled`` predicate says the remaining jobs can no
longer matter, cancels them through the task group's cancel scope.

Jobs finish in any order, and the time a job takes can depend on its outcome (an agent
that refuses quickly and complies slowly). A stopping decision that read outcomes in
completion order would therefore be biased by concurrency: it would see the fast
outcomes first. So ``settled`` sees outcomes in **index order**: the outcome of job
*i* is handed to it once the outcomes of jobs 0..i-1 have been, and a decision taken at
index *m* rests on jobs 0..m exactly, whatever the concurrency. Jobs above *m* that
had already finished are returned apart (``late``), never counted.

With a ``controller`` (``concurrency="auto"``, ``rampart.engine._auto_concurrency``) the
limiter's ``total_tokens`` follows the controller's limit: set before every job starts
and after every job ends (before its token is released, so a lowered limit holds at
once). Each job runs with ``report_throttle()`` routed to it. Only the speed changes:
``settled`` still sees outcomes in index order.

``bound`` is the one mapping of a ``concurrency`` setting (``rampart._pacing``) to
the limiter and controller a fan-out runs under, for both of them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Generic, TypeVar

import anyio
import attrs

from rampart._pacing import AUTO
from rampart.engine._auto_concurrency import (
    AUTO_CONCURRENCY_CAP,
    AutoConcurrency,
    ConcurrencyStatistics,
    JobTicket,
    running_job,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from rampart._pacing import Setting

__all__ = ["FanOutResult", "bound", "fan_out"]

T = TypeVar("T")


@attrs.frozen(kw_only=True)
class FanOutResult(Generic[T]):
    """What a fan-out produced.

    ``completed`` holds the ``(index, outcome)`` pairs that count, in index order: every
    index without a settlement, else the indices up to and including the one at which
    ``settled`` returned True (``settled`` is then True). ``late`` holds the pairs of
    jobs above that index that finished anyway (before the cancellation reached them, or
    by ignoring it), in index order. The other ``cancelled_count`` indices never
    finished: cancelled by the settlement while running, or never started. Without a
    settlement (``settled`` False) a missing index is a job that ended by a cancellation
    of its own (on asyncio a job can raise ``CancelledError`` itself), which the caller
    reports as such, never as an early stop; no later index reaches ``settled`` then,
    since its lower indices are not all known.
    """

    completed: list[tuple[int, T]]
    cancelled_count: int
    late: list[tuple[int, T]] = attrs.field(factory=list)
    settled: bool = False
    concurrency: ConcurrencyStatistics | None = None
    """What the adaptive controller did (None without one)."""


def bound(
    concurrency: Setting | None, *, jobs: int
) -> tuple[anyio.CapacityLimiter, AutoConcurrency | None]:
    """The limiter (and, for ``"auto"``, the controller) a fan-out of ``jobs`` runs under.

    An int is that many at once; ``None`` no bound; ``"auto"`` an adaptive limit
    (``AutoConcurrency``) that never exceeds the jobs to run (a limit no job can use
    teaches nothing), nor ``AUTO_CONCURRENCY_CAP``, and is at least 1 (a resumed group
    may have no job left).
    """
    if concurrency == AUTO:
        controller = AutoConcurrency(maximum=max(1, min(jobs, AUTO_CONCURRENCY_CAP)))
        return anyio.CapacityLimiter(controller.limit), controller
    return anyio.CapacityLimiter(math.inf if concurrency is None else concurrency), None


async def fan_out(
    run_one: Callable[[int], Awaitable[T]],
    *,
    count: int,
    limiter: anyio.CapacityLimiter,
    settled: Callable[[int, T], bool] | None = None,
    controller: AutoConcurrency | None = None,
    units: Callable[[T], int | None] | None = None,
) -> FanOutResult[T]:
    """Run ``run_one(index)`` for every index in ``range(count)``, at most ``limiter`` at once.

    Jobs start in index order and finish in any order: a worker first waits for a
    limiter token, then takes the next index and calls ``run_one`` with no checkpoint
    in between, so the synchronous prefix of ``run_one`` (e.g. building the job) runs
    in index order. The limiter may be shared with other fan-outs to bound them
    together.

    Workers are started one at a time, each given a turn of the scheduler before the
    next is started. Started all at once, every job would take each of its steps only
    after every other job had taken the same one (the event loop runs ready tasks in
    order), so no job would reach its first wait (its first request to the agent)
    before all of them had been set up; staggered, the first requests go out at once
    and the later jobs are set up while the earlier ones wait on the agent.

    ``settled(index, outcome)`` is called once per index, in index order (see the
    module docstring), with no checkpoint between the job's return and the call, so it
    can keep an incremental tally. When it returns True, every job still waiting or
    running is cancelled; outcomes of higher indices go to ``late``.

    ``controller`` makes the bound adaptive (see the module docstring): the limiter is
    then this fan-out's own. A job's latency is its wall time divided by
    ``units(outcome)`` (e.g. its turns; 1 without ``units``; None: the job says
    nothing about latency).

    Exceptions from ``run_one`` propagate (as the task group's exception group) and
    cancel the other jobs; cancellation from outside propagates unchanged.
    """
    outcomes: dict[int, T] = {}
    next_index = 0
    frontier = 0  # the next index whose outcome goes to ``settled``
    decided_at: int | None = None
    running = 0  # jobs inside run_one (a token can be held by a worker about to stop)

    async with anyio.create_task_group() as tg:
        scope = tg.cancel_scope

        def stopping() -> bool:
            # A settlement or a failing job cancelled the group (a call, not an attribute
            # read, because the answer changes across the job's await).
            return scope.cancel_called

        def settle() -> None:
            # Hand over every outcome whose lower indices are all known.
            nonlocal frontier, decided_at
            assert settled is not None
            while frontier in outcomes:
                index = frontier
                frontier += 1
                if settled(index, outcomes[index]):
                    decided_at = index
                    scope.cancel()
                    return

        def follow_controller() -> None:
            if controller is not None and limiter.total_tokens != controller.limit:
                limiter.total_tokens = controller.limit

        async def run_adaptive(index: int) -> T:
            assert controller is not None
            nonlocal running
            running += 1
            # Running, plus not yet started (``index`` itself is running already).
            ticket: JobTicket = controller.started(
                in_flight=running, demand=running + count - next_index
            )
            began = anyio.current_time()
            try:
                with running_job(controller, ticket):
                    outcome = await run_one(index)
            finally:
                running -= 1
            done = 1 if units is None else units(outcome)
            latency = None if done is None or done < 1 else (anyio.current_time() - began) / done
            controller.finished(ticket, latency=latency)
            return outcome

        async def worker() -> None:
            nonlocal next_index
            while next_index < count:
                follow_controller()
                try:
                    # A free token is taken without a trip through the scheduler; the
                    # job itself yields soon enough.
                    limiter.acquire_nowait()
                except anyio.WouldBlock:
                    await limiter.acquire()
                try:
                    # Take the index only once holding a token and start the job with no
                    # checkpoint in between, so jobs begin in index order.
                    if next_index >= count or stopping():
                        return
                    index = next_index
                    next_index += 1
                    if controller is None:
                        outcome = await run_one(index)
                    else:
                        outcome = await run_adaptive(index)
                finally:
                    follow_controller()
                    limiter.release()
                # Kept even after a settlement: a job that finished is reported (late).
                outcomes[index] = outcome
                if stopping():
                    return
                if settled is not None:
                    settle()
                    if stopping():
                        return

        follow_controller()
        tokens = limiter.total_tokens if controller is None else controller.bounds[1]
        workers = count if math.isinf(tokens) else min(count, int(tokens))
        for _ in range(workers):
            tg.start_soon(worker)
            await anyio.lowlevel.checkpoint()  # give it a turn before starting the next

    last = count - 1 if decided_at is None else decided_at
    completed = [(index, outcomes[index]) for index in range(last + 1) if index in outcomes]
    late = [(index, outcomes[index]) for index in range(last + 1, count) if index in outcomes]
    return FanOutResult(
        completed=completed,
        cancelled_count=count - len(completed) - len(late),
        late=late,
        settled=decided_at is not None,
        concurrency=None if controller is None else controller.statistics(),
    )
