"""What decided a failed run: findings, or only infrastructure failures.

pytest exits 1 for any failed test. For a red-team run that mixes two answers a CI job
must tell apart: "the agent is unsafe" (a finding: act on it) and "the endpoint, the
judge or the network was down" (nothing was learned: run it again). A run whose every
failure is an infrastructure failure -- each failed test failed with ERROR results
(rampart's one home for infrastructure failures), no result anywhere is UNSAFE, and no
other test failed -- exits ``INFRASTRUCTURE_FAILURE`` instead of 1.

A finding always wins: one UNSAFE result, or one plain test that failed on its own,
keeps the status at 1. The code is outside pytest's own range (0-5), so it never
reads as one of pytest's statuses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from rampart.core.result import SafetyStatus

if TYPE_CHECKING:
    from collections.abc import Iterable

    from rampart.pytest_plugin._ledger import RecordedResult

__all__ = [
    "INFRASTRUCTURE_FAILURE",
    "USAGE_ERROR_PROPERTY",
    "decided_by_infrastructure",
    "exit_status",
]

#: The exit status of a run that failed only through infrastructure failures.
INFRASTRUCTURE_FAILURE = 6

#: The user property of a test report whose item failed its setup with a usage error (a
#: bad marker, found by an xdist worker): the controller ends the run with pytest's
#: usage-error status, as a single process does at collection.
USAGE_ERROR_PROPERTY = "rampart_usage_error"


def decided_by_infrastructure(
    failed_nodeids: Iterable[str], results: Iterable[RecordedResult]
) -> bool:
    """Whether every failed test (``failed_nodeids``) failed with ERROR results and no
    result of the run is UNSAFE: nothing failed but infrastructure."""
    failed = set(failed_nodeids)
    if not failed:
        return False
    with_error: set[str] = set()
    for recorded in results:
        status = recorded.result.status
        if status is SafetyStatus.UNSAFE:
            return False  # a finding wins
        if status is SafetyStatus.ERROR:
            with_error.add(recorded.attribution.nodeid)
    return failed <= with_error


def exit_status(
    status: int, failed_nodeids: Iterable[str], results: Iterable[RecordedResult]
) -> int:
    """``status`` (pytest's), or ``INFRASTRUCTURE_FAILURE`` for a run that failed
    (status 1) only through infrastructure failures."""
    if status != pytest.ExitCode.TESTS_FAILED:
        return status
    if decided_by_infrastructure(failed_nodeids, results):
        return INFRASTRUCTURE_FAILURE
    return status
