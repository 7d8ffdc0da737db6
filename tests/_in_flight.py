"""How many requests a client holds in flight at once, against the real test server."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from rampart.testing.server import RunningServer


async def held_at_once(
    server: RunningServer, send: Callable[[], Awaitable[object]], count: int
) -> int:
    """Start ``count`` sends at once to ``server`` (started with ``hang_rate=1.0``, so
    none is answered) and return how many it saw in flight together: ``count``, or the
    client's own bound when it queues the rest. The hanging requests are then released
    (they fail with 503). Waits at most 60 s for them to arrive (a loaded machine)."""

    async def one() -> None:
        with contextlib.suppress(Exception):
            await send()

    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(one)
        with anyio.move_on_after(60):
            # Polling is the point here: the server's counter is what is measured.
            while server.statistics().in_flight < count:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        reached = server.statistics().in_flight
        server.app.close()
    return reached
