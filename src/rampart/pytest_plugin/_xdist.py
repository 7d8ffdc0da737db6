"""Moving results from xdist workers to the controller, and noticing when some went missing.

A worker (``XdistWorker``) journals each finished unit at once (the run journal is
shared by every process of the run) and attaches each test's results to its test
report in the envelope of ``_envelope``, counting what it streamed. The controller
(``XdistController``) hands every worker the run's settings (run id, journal, resumed
journal) and the shared rate-limit directory, records what arrives on its run
ledger, attributed to the worker that sent it, and compares each worker's count with
what arrived; a crashed worker, an unreadable payload or a mismatch marks the run
incomplete. ``worker_count`` in the report counts worker *slots*: a worker xdist
starts to replace a crashed one takes the crashed one's slot.

Trust boundary: payloads come from our own workers, but are parsed as data (canonical
JSON records, checked envelope fields), never unpickled or evaluated.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from rampart.pytest_plugin._envelope import (
    decode_envelope,
    encode_entries,
    envelope_notes,
    make_envelope,
)
from rampart.pytest_plugin._limits import (
    WORKERINPUT_KEY,
    WORKEROUTPUT_KEY,
    LimitTracker,
    export_shared_directory,
)
from rampart.pytest_plugin._runjournal import RUN_INPUT_KEY

if TYPE_CHECKING:
    from rampart.pytest_plugin._journal import JournalWriter
    from rampart.pytest_plugin._ledger import FinishedUnit, GroupRecord, RunLedger

__all__ = ["REPORT_ATTRIBUTE", "STREAMED_KEY", "XdistController", "XdistWorker"]

REPORT_ATTRIBUTE = "rampart_payload"
STREAMED_KEY = "rampart_streamed_results"


class XdistWorker:
    """Worker-side hooks: units are journaled as they finish and ride on test reports;
    the count goes in workeroutput."""

    def __init__(
        self,
        *,
        config: pytest.Config,
        max_bytes: int,
        limits: LimitTracker,
        journal: JournalWriter | None = None,
    ) -> None:
        self._max_bytes = max_bytes
        self._limits = limits
        self._journal = journal
        self._streamed = 0
        self._pending: dict[str, list[dict[str, Any]]] = {}
        self._notes: list[str] = []
        export_shared_directory(config.workerinput)  # type: ignore[attr-defined]

    def record(self, item: pytest.Item, unit: FinishedUnit) -> None:
        if self._journal is not None:
            self._journal.write_unit(unit)
        entries = encode_entries(unit.results, max_bytes=self._max_bytes)
        self._pending.setdefault(item.nodeid, []).extend(entries)

    def warn(self, message: str) -> None:
        self._notes.append(message)

    def deliver(
        self, item: pytest.Item, report: pytest.TestReport | None, group: GroupRecord | None
    ) -> None:
        entries = self._pending.pop(item.nodeid, [])
        if report is None:
            return  # interrupted: no report leaves; the journal has what finished
        notes, self._notes = self._notes, []
        payload = make_envelope(
            nodeid=item.nodeid, name=item.name, entries=entries, group=group, notes=notes
        )
        setattr(report, REPORT_ATTRIBUTE, payload)
        self._streamed += len(entries)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        output = session.config.workeroutput  # type: ignore[attr-defined]
        output[STREAMED_KEY] = self._streamed
        output[WORKEROUTPUT_KEY] = self._limits.statistics()


class XdistController:
    """Controller-side hooks, registered only when pytest-xdist is active.

    Kept apart from the session's own hooks because these hook names exist only when
    xdist is loaded (pytest rejects unknown ``pytest_*`` hooks).
    """

    def __init__(self, ledger: RunLedger, *, run_input: dict[str, Any] | None = None) -> None:
        self._ledger = ledger
        self._run_input = run_input
        self._received: Counter[str] = Counter()
        self._limits_directory: str | None = None

    def pytest_configure_node(self, node: Any) -> None:
        """Hand every worker the run's settings and shared rate-limit bucket directory."""
        if self._limits_directory is None:
            self._limits_directory = tempfile.mkdtemp(prefix="rampart-limits-")
        node.workerinput[WORKERINPUT_KEY] = self._limits_directory
        if self._run_input is not None:
            node.workerinput[RUN_INPUT_KEY] = self._run_input

    def pytest_unconfigure(self) -> None:
        if self._limits_directory is not None:
            shutil.rmtree(self._limits_directory, ignore_errors=True)

    def pytest_testnodeready(self, node: Any) -> None:
        self._ledger.worker_ready(_worker_id(node))

    def pytest_runtest_logreport(self, report: Any) -> None:
        payload = getattr(report, REPORT_ATTRIBUTE, None)
        node = getattr(report, "node", None)
        if payload is None or node is None:
            return
        worker = _worker_id(node)
        try:
            results, group = decode_envelope(payload, worker=worker)
        except Exception as exc:  # a lost payload marks the run incomplete
            self._ledger.mark_incomplete(
                f"results of {report.nodeid} from worker {worker} could not be read: "
                f"{type(exc).__name__}: {exc}"
            )
            return
        self._received[worker] += len(results)
        for recorded in results:
            self._ledger.record(recorded)
        if group is not None:
            self._ledger.record_group(group)
        for note in envelope_notes(payload):
            self._ledger.warn(note)

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        worker = _worker_id(node)
        self._ledger.worker_seen(worker)
        if error is not None:
            if error == "keyboard-interrupt":
                # xdist reports an interrupted worker this way; the run is interrupted,
                # and what the worker journaled is read back at the end.
                self._ledger.mark_interrupted()
                return
            self._ledger.worker_crashed(worker)
            self._ledger.mark_incomplete(
                f"xdist worker {worker} crashed; results it had not streamed are lost ({error})"
            )
            return
        output = getattr(node, "workeroutput", None) or {}
        limit_statistics = output.get(WORKEROUTPUT_KEY)
        if isinstance(limit_statistics, list):
            self._ledger.add_limit_statistics(
                [snapshot for snapshot in limit_statistics if isinstance(snapshot, dict)]
            )
        expected = output.get(STREAMED_KEY)
        received = self._received[worker]
        if expected is None:
            self._ledger.mark_incomplete(
                f"xdist worker {worker} finished without reporting its rampart result count"
            )
        elif expected != received:
            self._ledger.mark_incomplete(
                f"xdist worker {worker} streamed {expected} results but the controller "
                f"received {received}"
            )

    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        del report, sched
        self._ledger.mark_incomplete(f"{crashitem} crashed its xdist worker; its results are lost")


def _worker_id(node: Any) -> str:
    gateway = getattr(node, "gateway", None)
    return str(getattr(gateway, "id", "?"))
