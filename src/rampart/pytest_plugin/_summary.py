"""The terminal safety summary of this run: the ledger's entries, rendered by
``rampart.reporting._terminal`` (the renderer ``rampart report`` uses too).

Each ``RecordedResult`` becomes a ``SummaryEntry`` from its attribution, and each
``GroupRecord`` its report statement (``group_summary``), so the summary is a
projection of the same data as the report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.pytest_plugin._report_data import group_summary

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.pytest_plugin._ledger import GroupRecord, RecordedResult
    from rampart.reporting._terminal import SummaryEntry

__all__ = ["entry", "summary_lines"]


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
