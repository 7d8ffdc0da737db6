"""Hooks rampart adds to pytest (registered by the entry point's ``pytest_addhooks``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import pytest

    from rampart.reporting import ReportSink

__all__ = ["pytest_rampart_sinks"]

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_rampart_sinks(config: pytest.Config) -> list[ReportSink]:  # type: ignore[empty-body]
    """Return report sinks for this run; rampart emits to the union of all implementations.

    Resolved once, on the xdist controller or the single process, at session end. When
    any implementation exists, the deprecated ``rampart_sinks`` fixture is ignored.
    Implementations are called one at a time, so one that raises is reported by name
    (and fails the run) while the others still receive the report.
    """
