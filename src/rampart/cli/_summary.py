"""The terminal safety summary of saved runs, as pytest printed it.

The records of a ``RunView`` become the summary's entries, beside its groups (each
held as its report entry); ``rampart.reporting._terminal`` renders them,
the same renderer the pytest plugin prints with, so a saved run re-renders line for
line as its run printed it (the same modes, bounds, sanitizer and redaction).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rampart.cli._view import RunView
    from rampart.codec import ResultRecord
    from rampart.reporting._internal import SummaryEntry

__all__ = ["MODES", "entry", "summary_lines"]

#: ``--summary``'s choices: the renderer's modes (``_terminal.MODES``), spelled out here
#: so that building the parser imports no report sink (``rampart --help`` stays light).
MODES = ("all", "groups", "failures")


def entry(record: ResultRecord, position: int) -> SummaryEntry:
    """The record at ``position`` (in file order) as the summary lists it.

    A trial clone's record belongs to its group's test (``group_key``); a record
    without a node id is ``record N``. The line shows the test name the run recorded
    (``_pytest_test_name``), else the last part of its node id.
    """
    from rampart.cli._view import group_key, record_nodeid
    from rampart.reporting._internal import SummaryEntry

    nodeid = record_nodeid(record)
    own = f"record {position}" if nodeid is None else nodeid
    key = group_key(record)
    test = own if key is None else key[0]
    name = record.result.metadata.get("_pytest_test_name")
    if not (isinstance(name, str) and name):
        name = own.rpartition("::")[2]
    return SummaryEntry(
        result=record.result,
        nodeid=test,
        name=test.rpartition("::")[2],
        shown=name,
        clone=None if key is None else key[1],
    )


def summary_lines(view: RunView, *, mode: str = "all") -> list[str]:
    """The summary of ``view``; ``mode`` is ``--summary`` (``_terminal.summary_lines``)."""
    from rampart.reporting._internal import summary_lines as render_summary

    return render_summary(
        [entry(record, position) for position, record in enumerate(view.records)],
        list(view.groups.values()),
        mode=mode,
    )
