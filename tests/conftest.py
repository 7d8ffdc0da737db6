"""Shared test configuration: async tests run on both anyio backends, each test in a run
of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from rampart import _runs

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every ``@pytest.mark.anyio`` test runs once on asyncio and once on trio."""
    return str(request.param)


@pytest.fixture(autouse=True)
def _own_run() -> Iterator[None]:
    """Each test is a run of its own, as each pytest session is for users: limiters are
    one per name per run (``rampart.limits``), so one test's never carry into the next."""
    with _runs.new_run():
        yield
