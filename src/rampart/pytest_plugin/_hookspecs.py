"""Hooks rampart adds to pytest."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

    from rampart.reporting import ReportSink


def pytest_rampart_sinks(config: pytest.Config) -> list[ReportSink]:  # type: ignore[empty-body]
    """Return report sinks for this run; rampart emits to the union of all implementations.

    Resolved once, on the xdist controller or the single process, at session end. When
    any implementation exists, the deprecated ``rampart_sinks`` fixture is ignored.
    """
