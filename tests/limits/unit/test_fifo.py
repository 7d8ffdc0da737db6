"""``FifoGate`` over ``Places``: places in arrival order, taken at once when free, never
leaked."""

from __future__ import annotations

import anyio
import pytest

from rampart.limits._fifo import FifoGate, Places


@pytest.mark.anyio
async def test_waiters_are_served_in_arrival_order_and_more_places_wake_them() -> None:
    places = Places(1)
    gate = FifoGate(take=places.take, give=places.give)
    await gate.enter()  # free: taken at once
    order: list[int] = []

    async def waiter(index: int) -> None:
        await gate.enter()
        order.append(index)

    async with anyio.create_task_group() as group:
        for index in range(4):
            group.start_soon(waiter, index)
            await anyio.wait_all_tasks_blocked()
        assert order == []
        gate.leave()  # one place back: the first waiter
        await anyio.wait_all_tasks_blocked()
        assert order == [0]
        places.limit += 2  # the policy allows more: wake() hands them out in order
        gate.wake()
        await anyio.wait_all_tasks_blocked()
        # The places went to the two longest waiting; trio may run them in either order.
        assert sorted(order) == [0, 1, 2]
        gate.leave()
    assert sorted(order) == [0, 1, 2, 3]
    assert places.taken == places.limit == 3  # all held by the waiters, none leaked


@pytest.mark.anyio
async def test_a_cancelled_waiter_leaves_no_place_taken() -> None:
    places = Places(1)
    gate = FifoGate(take=places.take, give=places.give)
    await gate.enter()
    async with anyio.create_task_group() as group:
        group.start_soon(gate.enter)
        await anyio.wait_all_tasks_blocked()
        group.cancel_scope.cancel()
    gate.leave()
    assert places.taken == 0  # the cancelled waiter took nothing
    await gate.enter()  # and is no longer queued ahead of a newcomer
    assert places.taken == 1
