"""The run ledger: everything one pytest run produced that rampart reports.

One ``RunLedger`` per pytest process lives in ``config.stash[LEDGER_KEY]``. Finished
results enter through ``RunLedger.record`` -- the one place, in a single process and
on the xdist controller alike (a run journal subscribes there) -- each as a
``RecordedResult``: the result plus its ``Attribution`` (test, trial clone, position,
worker), carried as data next to it. Trial groups arrive as ``GroupRecord`` with their
verdict; incomplete-run markers, sink failures, warnings and written report paths have
methods of their own. Other modules read the ledger; they never mutate its lists.

The bookkeeping keys spec'd for ``Result.metadata`` (``_pytest_nodeid``,
``_pytest_test_name``, ``_rampart_result_index``, ``_rampart_source_worker``) are
written from the attribution at the report boundary (``RecordedResult.stamped``), and
never parsed back.
"""

from __future__ import annotations

import time
from typing import Any

import attrs
import pytest

from rampart.core.result import Result
from rampart.pytest_plugin._groups import GroupVerdict

__all__ = ["Attribution", "GroupRecord", "LEDGER_KEY", "RecordedResult", "RunLedger"]

LEDGER_KEY = pytest.StashKey["RunLedger"]()


@attrs.frozen(kw_only=True)
class Attribution:
    """Where a result came from.

    ``nodeid`` and ``name`` are the pytest item's; ``clone`` is the trial clone index
    (None for a plain test, and for what a trial test's fixtures recorded); ``index`` is
    the result's position among those of the same test and clone; ``worker`` is the
    xdist worker that ran it (None in the process that reports).
    """

    nodeid: str
    name: str
    clone: int | None = None
    index: int = 0
    worker: str | None = None

    @property
    def test_nodeid(self) -> str:
        """The nodeid as reported: a clone gets ``[trial-N]`` appended."""
        return self.nodeid + self._suffix()

    @property
    def test_name(self) -> str:
        return self.name + self._suffix()

    def _suffix(self) -> str:
        return "" if self.clone is None else f"[trial-{self.clone}]"

    def sort_key(self) -> tuple[str, int, int, str]:
        """Report order: test, clone (numerically; the fixtures' results first), position,
        worker."""
        clone = -1 if self.clone is None else self.clone
        return (self.nodeid, clone, self.index, self.worker or "")

    def metadata(self) -> dict[str, Any]:
        """The bookkeeping keys this attribution adds to ``Result.metadata`` in the report."""
        keys: dict[str, Any] = {
            "_pytest_test_name": self.test_name,
            "_pytest_nodeid": self.test_nodeid,
            "_rampart_result_index": self.index,
        }
        if self.worker is not None:
            keys["_rampart_source_worker"] = self.worker
        return keys


@attrs.frozen(kw_only=True)
class RecordedResult:
    """A finished result with its attribution.

    ``lost`` says why this result is an ERROR marker standing in for one that could not
    be recorded or transported (None for a real result); recording one marks the run
    incomplete.
    """

    result: Result
    attribution: Attribution
    lost: str | None = None

    def stamped(self) -> Result:
        """The result as reported: a copy whose metadata carries the bookkeeping keys."""
        metadata = {**self.result.metadata, **self.attribution.metadata()}
        return attrs.evolve(self.result, metadata=metadata)


@attrs.frozen(kw_only=True)
class GroupRecord:
    """A finished trial group: the item it ran in, its harm category and its verdict."""

    nodeid: str
    name: str
    verdict: GroupVerdict
    harm: str | None = None
    worker: str | None = None


class RunLedger:
    """What this pytest process will report; see the module docstring."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self._results: list[RecordedResult] = []
        self._groups: list[GroupRecord] = []
        self._incomplete: list[str] = []
        self._sink_failures: list[str] = []
        self._warnings: list[str] = []
        self._written: list[str] = []
        self._workers: set[str] = set()
        self._limit_statistics: list[dict[str, Any]] = []
        self._backends: set[str] = set()

    # -- recording ----------------------------------------------------------------------

    def record(self, recorded: RecordedResult) -> None:
        """Record one finished result: the single way a result enters the run."""
        self._results.append(recorded)
        if recorded.lost is not None:
            self.mark_incomplete(
                f"a result of {recorded.attribution.test_nodeid} was lost: {recorded.lost}"
            )

    def record_group(self, group: GroupRecord) -> None:
        self._groups.append(group)

    def mark_incomplete(self, reason: str) -> None:
        """The report may not reflect every test: said in the summary and the report, and
        the exit status is forced non-zero."""
        self._incomplete.append(reason)

    def sink_failed(self, message: str) -> None:
        """A report was not written (a sink or a sink hook failed); the run fails."""
        self._sink_failures.append(message)

    def warn(self, message: str) -> None:
        self._warnings.append(message)

    def report_written(self, path: str) -> None:
        self._written.append(path)

    def worker_seen(self, worker: str) -> None:
        self._workers.add(worker)

    def backend_seen(self, backend: str) -> None:
        """A test ran on this anyio backend (``"asyncio"``, ``"trio"``)."""
        self._backends.add(backend)

    def add_limit_statistics(self, snapshots: list[dict[str, Any]]) -> None:
        """Rate-limiter statistics another process (an xdist worker) reported."""
        self._limit_statistics.extend(snapshots)

    # -- reading ------------------------------------------------------------------------

    @property
    def results(self) -> tuple[RecordedResult, ...]:
        """Every recorded result, in report order (see ``Attribution.sort_key``)."""
        return tuple(sorted(self._results, key=_report_order))

    @property
    def groups(self) -> tuple[GroupRecord, ...]:
        return tuple(self._groups)

    @property
    def incomplete_reasons(self) -> tuple[str, ...]:
        return tuple(self._incomplete)

    @property
    def sink_failures(self) -> tuple[str, ...]:
        return tuple(self._sink_failures)

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(self._warnings)

    @property
    def written(self) -> tuple[str, ...]:
        return tuple(self._written)

    @property
    def workers(self) -> frozenset[str]:
        return frozenset(self._workers)

    @property
    def backends(self) -> frozenset[str]:
        return frozenset(self._backends)

    @property
    def limit_statistics(self) -> tuple[dict[str, Any], ...]:
        return tuple(self._limit_statistics)

    @property
    def failed(self) -> bool:
        """The run must not exit 0: it is incomplete, or a report was not written."""
        return bool(self._incomplete or self._sink_failures)

    def report_results(self) -> list[Result]:
        """The results as the report carries them: in report order, stamped."""
        return [recorded.stamped() for recorded in self.results]


def _report_order(recorded: RecordedResult) -> tuple[str, int, int, str]:
    return recorded.attribution.sort_key()
