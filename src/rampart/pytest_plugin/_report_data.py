"""From the run ledger to the report's typed sections and the terminal summary.

``group_summary`` states one ``GroupRecord`` as a ``TrialGroupSummary``
(``GroupVerdict.summary``: the verdict, computed once by the runner, with its reason);
``run_info`` gathers the ``RunInfo``: start time, exit status, interrupted / incomplete
markers, versions, backends and xdist workers. ``note_backend`` notes which anyio
backend each test ran on, on its call report (called by the item hooks, which note it
on the ledger; the attribute crosses from an xdist worker like any report attribute,
and the xdist controller reads it back with ``backend_of``).

``summary_lines`` is the terminal safety summary of this run: the ledger's entries,
rendered by ``rampart.reporting._terminal`` (the renderer ``rampart report`` uses
too). Each ``RecordedResult`` becomes a ``SummaryEntry`` from its attribution, and each
``GroupRecord`` its report statement (``group_summary``), so the summary is a
projection of the same data as the report.
"""

from __future__ import annotations

import platform
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.pytest_plugin._ledger import GroupRecord, RecordedResult, RunLedger
    from rampart.reporting import RunInfo, TrialGroupSummary
    from rampart.reporting._terminal import SummaryEntry

__all__ = [
    "BACKEND_ATTRIBUTE",
    "backend_of",
    "entry",
    "group_summary",
    "note_backend",
    "run_info",
    "summary_lines",
]


BACKEND_ATTRIBUTE = "rampart_anyio_backend"


def group_summary(group: GroupRecord) -> TrialGroupSummary:
    """The report's statement of one finished trial group."""
    return group.verdict.summary(
        nodeid=group.nodeid,
        test_name=group.name,
        harm_category=group.harm or None,
        worker=group.worker,
    )


def run_info(
    *,
    ledger: RunLedger,
    metadata: dict[str, Any],
    duration_seconds: float,
    exit_status: int | None,
) -> RunInfo:
    """The run section, from the ledger and the report's run ``metadata``.

    ``metadata["interrupted"]`` (set when a run is stopped by Ctrl-C) and
    ``metadata["incomplete"]`` are read from there, so the section and the metadata
    never disagree. An incomplete run ends non-zero, so a 0 is reported as 1.
    """
    from rampart._version import __version__
    from rampart.reporting import RunInfo

    started = datetime.now(UTC) - timedelta(seconds=duration_seconds)
    incomplete = bool(metadata.get("incomplete")) or bool(ledger.incomplete_reasons)
    if incomplete and exit_status == 0:
        exit_status = int(pytest.ExitCode.TESTS_FAILED)
    workers = metadata.get("worker_count", 0)
    dist_mode = metadata.get("dist_mode")
    return RunInfo(
        started_at=started.isoformat(timespec="milliseconds"),
        duration_seconds=duration_seconds,
        exit_status=exit_status,
        interrupted=bool(metadata.get("interrupted")),
        incomplete=incomplete,
        incomplete_reasons=[str(reason) for reason in ledger.incomplete_reasons],
        rampart_version=__version__,
        python_version=platform.python_version(),
        pytest_version=pytest.__version__,
        platform=f"{sys.platform}-{platform.machine()}",
        anyio_backends=sorted(ledger.backends),
        xdist_workers=workers if isinstance(workers, int) and not isinstance(workers, bool) else 0,
        dist_mode=dist_mode if isinstance(dist_mode, str) and dist_mode else None,
    )


def _backend_name(value: object) -> str | None:
    """``"trio"`` from an ``anyio_backend`` value: a name, or a ``(name, options)`` pair."""
    if isinstance(value, tuple | list) and value:
        value = value[0]
    return value if isinstance(value, str) and value else None


def note_backend(item: pytest.Item, report: pytest.TestReport) -> str | None:
    """Put the anyio backend the test ran on (if any) on its call ``report``; that name."""
    funcargs = getattr(item, "funcargs", None) or {}
    backend = _backend_name(funcargs.get("anyio_backend"))
    if backend is not None:
        setattr(report, BACKEND_ATTRIBUTE, backend)
    return backend


def backend_of(report: object) -> str | None:
    """The anyio backend ``note_backend`` put on a (worker's) report, if any."""
    backend = getattr(report, BACKEND_ATTRIBUTE, None)
    return backend if isinstance(backend, str) and backend else None


def entry(recorded: RecordedResult) -> SummaryEntry:
    """``recorded`` as the summary lists it."""
    from rampart.reporting._terminal import SummaryEntry

    attribution = recorded.attribution
    return SummaryEntry(
        result=recorded.result,
        nodeid=attribution.nodeid,
        name=attribution.name,
        shown=attribution.test_name,
        clone=attribution.clone,
    )


def summary_lines(
    results: Sequence[RecordedResult], groups: Sequence[GroupRecord], *, mode: str = "all"
) -> list[str]:
    """The body under the ``RAMPART Safety Summary`` separator (``_terminal.summary_lines``)."""
    from rampart.reporting import _terminal

    return _terminal.summary_lines(
        [entry(recorded) for recorded in results],
        [group_summary(group) for group in groups],
        mode=mode,
    )
