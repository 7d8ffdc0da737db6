"""``ReportSink``: the one method a report destination implements."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from rampart.reporting._report import TestRunReport

__all__ = ["ReportSink"]


@runtime_checkable
class ReportSink(Protocol):
    """Receives the run's :class:`TestRunReport` once, at the end of the pytest session.

    Under pytest-xdist it is called once, on the controller, with every worker's
    results. An exception raised here is reported by the plugin and makes the run's
    exit status non-zero; a sink must not swallow its own failures.
    """

    async def emit_async(self, *, report: TestRunReport) -> None:
        """Persist or forward ``report``."""
        ...
