from __future__ import annotations

import anyio
import pytest

from rampart.core.injection import sleep_until_ready_async


@pytest.mark.anyio
async def test_sleep_until_ready_runs_on_both_backends() -> None:
    """The readiness helper is plain anyio, so it works on asyncio and trio alike."""
    before = anyio.current_time()
    await sleep_until_ready_async(0)
    assert anyio.current_time() >= before
