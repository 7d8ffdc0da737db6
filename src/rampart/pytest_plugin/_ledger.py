"""The run ledger: everything one pytest run produced that rampart reports.

One ``RunLedger`` per pytest process lives in ``config.stash[LEDGER_KEY]``. Finished
results enter through ``RunLedger.record`` -- the one place, in a single process and
on the xdist controller alike -- each as a ``RecordedResult``: the result plus its
``Attribution`` (test, trial clone, position, worker), carried as data next to it.
Results that are final together (one trial clone, or a whole test) arrive as a
``FinishedUnit`` through ``record_unit``, which records each result and then tells the
unit's subscribers (the run journal, ``_journal``) -- as soon as the clone finished,
not when its test is over. Trial groups arrive as their report entries
(``TrialGroupSummary``, stated by ``rampart.reporting._group_text.group_entry``);
incomplete-run markers, sink failures, warnings and written report paths have methods
of their own. Other modules read the ledger; they never mutate its lists.

Memory stays bounded: ``record`` writes each full result to the ledger's
``ResultStore`` (a spill file, below) and keeps a *slim* copy for the summary and
the verdicts, so ``RunLedger.results`` hold results without turns and with little
metadata. The
report reads the full results back one at a time (``report_results``). A result the
canonical codec cannot record is replaced there by an attributed ERROR marker, and
the run is marked incomplete.

The bookkeeping keys spec'd for ``Result.metadata`` (``_pytest_nodeid``,
``_pytest_test_name``, ``_rampart_result_index``, ``_rampart_source_worker``) are
written from the attribution at the report boundary (``RecordedResult.stamped``), and
never parsed back.

Why the spill store: a long trial campaign records tens of thousands of results,
each a tree of turns, requests, responses and evaluations. Keeping them all in memory
until the session ends grew without bound (50,000 clones of a 2-turn attack took about a gigabyte).
So the ledger keeps, per result, only what the summary, the verdicts and the report
order need -- a *slim* copy of the result (status, summary, observability level,
harm category, strategy, population, duration, injection records, and of its metadata
only which test and row it is and what the row tested, ``SLIM_KEYS``; no turns or
evaluation) -- and writes the full result, as its canonical ``rampart.trace.v2`` text,
to a ``ResultStore``: an anonymous temporary file (unlinked at once, so nothing is
left behind even by ``kill -9``). The report reads each full result back when a sink
asks for it (``rampart.reporting.StoredResults``), one at a time.

The ledger stores each result as the report will carry it (stamped with its
attribution, ``pytest_nodeid`` and ``result_index`` on the record), so the file sinks
can write the stored canonical text as it is instead of decoding and encoding each
result again. Writing through the canonical codec is also the recordability check: a
result the codec cannot record raises ``SchemaError`` here, and the ledger records an
ERROR marker in its place.
"""

from __future__ import annotations

import enum
import os
import tempfile
import threading
import time
import uuid
import weakref
from typing import TYPE_CHECKING, Any

import attrs
import pytest

from rampart.core._internal import CASE_KEY, HARM_TAGS_KEY, PAYLOAD_KEY, clone_suffix
from rampart.core.errors import SchemaError
from rampart.core.result import Result, SafetyStatus

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO

    from rampart.reporting._internal import StoredResults, TrialGroupSummary

__all__ = [
    "Attribution",
    "FinishedUnit",
    "LEDGER_KEY",
    "LOSS_KEY",
    "RUN_KEY",
    "RecordedResult",
    "ResultStore",
    "SLIM_KEYS",
    "RunLedger",
    "UnitOutcome",
    "loss_marker",
    "population_suffix",
    "slim",
]

LEDGER_KEY = pytest.StashKey["RunLedger"]()

#: Set on an ERROR result that stands in for a lost one (a user-facing report key).
LOSS_KEY = "_rampart_transport_truncated"

#: On every result of an interrupted or incomplete run: the run's marks (its id,
#: ``interrupted``, ``incomplete`` and the reasons), so the trace carries them.
RUN_KEY = "_rampart_run"


def loss_marker(result: Result, reason: str, *, where: str, **extra: Any) -> Result:
    """The ERROR result reported in place of ``result``, which could not be kept."""
    return Result(
        status=SafetyStatus.ERROR,
        summary=f"Result lost in {where}: {reason}",
        observability_level=result.observability_level,
        harm_category=result.harm_category,
        strategy=result.strategy,
        metadata={LOSS_KEY: True, "_rampart_original_status": result.status.value, **extra},
    )


#: The metadata a slim result keeps: which test and row it is, and what the row tested
#: (what the summary, the coverage matrix and SARIF read without loading results).
SLIM_KEYS = (
    "_pytest_nodeid",
    "_pytest_test_name",
    "_rampart_result_index",
    CASE_KEY,
    PAYLOAD_KEY,
    HARM_TAGS_KEY,
    "agentdojo",
)


def slim(result: Result) -> Result:
    """``result`` without what only the full report needs (turns, the final evaluation,
    most metadata): what the ledger keeps in memory. It keeps its injection records
    (small) and the ``SLIM_KEYS`` of its metadata."""
    kept = {key: result.metadata[key] for key in SLIM_KEYS if key in result.metadata}
    return attrs.evolve(result, final_trace_evaluation=None, turns=[], metadata=kept)


class ResultStore:
    """Append-only canonical record texts in an anonymous temporary file.

    Records are written in batches of ``FLUSH_BYTES``: the file only bounds memory (it
    is anonymous, gone with the process, never read by another), so one ``pwrite`` per
    record bought nothing, and on the event loop each one released the GIL to threads
    that hold it for up to the switch interval (AgentDojo's pipelines at zero latency).
    A read flushes first. The report sinks read from worker threads at once, so the
    flush (which also makes the file) holds a lock.
    """

    #: Bytes of records held before they are written out together.
    FLUSH_BYTES = 256 * 1024

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._size = 0
        self._pending: list[bytes] = []
        self._flushed = 0  # where the pending records start in the file
        self._flushing = threading.Lock()
        self.bytes_written = 0

    def put(
        self, result: Result, *, pytest_nodeid: str | None = None, result_index: int | None = None
    ) -> tuple[int, int]:
        """Store ``result`` as a canonical record; its ``(offset, length)``.

        Raises ``SchemaError`` when the canonical codec cannot record it (nothing is
        stored then).
        """
        from rampart.codec import ResultRecord, serialize_record

        record = ResultRecord(result=result, pytest_nodeid=pytest_nodeid, result_index=result_index)
        data = serialize_record(record=record).encode("utf-8")
        with self._flushing:
            offset = self._size
            self._pending.append(data)
            self._size += len(data)
            self.bytes_written += len(data)
            if self._size - self._flushed >= self.FLUSH_BYTES:
                self._flush_locked()
        return offset, len(data)

    def _flush(self) -> None:
        with self._flushing:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if not self._pending:
            return
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="rampart-results-")  # noqa: SIM115
            # A store dropped without close() (a ledger built outside a session) still
            # closes its file.
            weakref.finalize(self, self._file.close)
        view = memoryview(b"".join(self._pending))
        offset = self._flushed
        while view:
            written = os.pwrite(self._file.fileno(), view, offset)
            view, offset = view[written:], offset + written
        self._pending.clear()
        self._flushed = self._size

    def text(self, location: tuple[int, int]) -> str:
        """The canonical record text stored at ``location``."""
        self._flush()
        if self._file is None:
            raise LookupError("the result store is empty")
        offset, length = location
        return os.pread(self._file.fileno(), length, offset).decode("utf-8")

    def get(self, location: tuple[int, int]) -> Result:
        """The full result stored at ``location``."""
        from rampart.codec import deserialize_record

        return deserialize_record(data=self.text(location)).result

    def close(self) -> None:
        with self._flushing:
            self._pending.clear()
            if self._file is not None:
                self._file.close()
                self._file = None


def population_suffix(group: int) -> str:
    """What a test's trial group ``group`` adds to the test's name: nothing for group 0
    (the test's clones, or the first population it ran), ``[population-K]`` for the
    population numbered ``K`` (from 0, in the order the test started them)."""
    return "" if group == 0 else f"[population-{group}]"


@attrs.frozen(kw_only=True)
class Attribution:
    """Where a result came from.

    ``nodeid`` and ``name`` are the pytest item's; ``clone`` is the trial clone index
    (None for a plain test, and for what a trial test's fixtures recorded): a clone of
    the test's clone group, or a trial of a population the test ran (``group`` says
    which of its groups: see ``population_suffix``); ``case`` is what that clone tests
    (the ``trial`` marker's ``ids=``); ``index`` is the result's position among those of
    the same test, group and clone; ``worker`` is the xdist worker that ran it (None in
    the process that reports).
    """

    nodeid: str
    name: str
    clone: int | None = None
    index: int = 0
    worker: str | None = None
    group: int = 0
    case: str | None = None

    @classmethod
    def of(
        cls,
        result: Result,
        *,
        nodeid: str,
        name: str,
        clone: int | None,
        index: int,
        worker: str | None = None,
        group: int = 0,
    ) -> Attribution:
        """The attribution of a result read back (the journal, the xdist transport):
        its clone's case is the one its metadata carries."""
        case = result.metadata.get(CASE_KEY) if clone is not None else None
        return cls(
            nodeid=nodeid,
            name=name,
            clone=clone,
            index=index,
            worker=worker,
            group=group,
            case=case if isinstance(case, str) and case else None,
        )

    @property
    def group_nodeid(self) -> str:
        """The nodeid of the trial group a clone belongs to (``TrialGroupSummary.nodeid``)."""
        return self.nodeid + population_suffix(self.group)

    @property
    def group_name(self) -> str:
        return self.name + population_suffix(self.group)

    @property
    def test_nodeid(self) -> str:
        """The nodeid as reported: a clone gets ``[trial-N]`` (``[trial-N:<case>]``)
        appended."""
        return self.group_nodeid + self._suffix()

    @property
    def test_name(self) -> str:
        return self.group_name + self._suffix()

    def _suffix(self) -> str:
        return "" if self.clone is None else clone_suffix(self.clone, self.case)

    def sort_key(self) -> tuple[str, int, int, int, str]:
        """Report order: test, group, clone (numerically; the fixtures' results first),
        position, worker."""
        clone = -1 if self.clone is None else self.clone
        return (self.nodeid, self.group, clone, self.index, self.worker or "")

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
    incomplete. ``resumed_from`` is the id of the run whose journal supplied it
    (``--rampart-resume``); such a result did not run in this one.
    """

    result: Result
    attribution: Attribution
    lost: str | None = None
    resumed_from: str | None = None
    #: Where the ledger's store holds the full result; set (and ``result`` slimmed) when
    #: the ledger records it, with where its confidences were not finite numbers.
    stored_at: tuple[int, int] | None = None
    unusable_confidences: tuple[int, ...] = ()

    def stamped(self) -> Result:
        """The result as reported: a copy whose metadata carries the bookkeeping keys."""
        metadata = {**self.result.metadata, **self.attribution.metadata()}
        if self.resumed_from is not None:
            metadata["_rampart_resumed_from"] = self.resumed_from
        return attrs.evolve(self.result, metadata=metadata)


class UnitOutcome(enum.Enum):
    """How the body behind a ``FinishedUnit`` ended."""

    PASSED = "passed"
    FAILED = "failed"  # its own assertions failed (a clone), or the test failed
    PARTIAL = "partial"  # an interrupt stopped it: results so far, not a finished unit


@attrs.frozen(kw_only=True)
class FinishedUnit:
    """Results that are final together: one trial clone, or one whole test.

    ``clone`` is the clone index (None for a plain test, and for what a trial test's
    fixtures recorded), of the test's trial group ``group`` (``Attribution.group``).
    ``detail`` is the one-line failure of a FAILED unit.
    ``test_hash`` identifies the test's code and markers (``_resume.test_hash``), so a
    journal entry is only reused for unchanged code.
    """

    nodeid: str
    name: str
    clone: int | None
    results: tuple[RecordedResult, ...]
    outcome: UnitOutcome = UnitOutcome.PASSED
    detail: str = ""
    test_hash: str = ""
    group: int = 0


class RunLedger:
    """What this pytest process will report; see the module docstring."""

    def __init__(self, *, run_id: str | None = None) -> None:
        self.started = time.monotonic()
        self.started_wall = time.time()
        self.run_id = uuid.uuid4().hex if run_id is None else run_id
        self._interrupted = False
        self._subscribers: list[Callable[[FinishedUnit], None]] = []
        self._results: list[RecordedResult] = []
        self._groups: list[TrialGroupSummary] = []
        self._incomplete: list[str] = []
        self._sink_failures: list[str] = []
        self._warnings: list[str] = []
        self._written: list[str] = []
        self._workers: set[str] = set()
        self._slots = 0
        self._freed_slots = 0
        self._replaced = 0
        self._limit_statistics: list[dict[str, Any]] = []
        self._store = ResultStore()
        self._backends: set[str] = set()

    # -- recording ----------------------------------------------------------------------

    def record(self, recorded: RecordedResult) -> None:
        """Record one finished result: the single way a result enters the run.

        The full result goes to the store, a slim copy stays here; a result the
        canonical codec cannot record is replaced by an ERROR marker that says so.
        """
        from rampart.reporting._internal import unusable_confidences

        try:
            location = self._put(recorded)
        except SchemaError as exc:
            reason = f"not recordable by the trace codec ({exc})"
            marker = loss_marker(recorded.result, reason, where="reporting")
            recorded = attrs.evolve(recorded, result=marker, lost=reason)
            location = self._put(recorded)
        recorded = attrs.evolve(
            recorded,
            result=slim(recorded.stamped()),
            stored_at=location,
            unusable_confidences=unusable_confidences(recorded.result),
        )
        self._results.append(recorded)
        if recorded.lost is not None:
            self.mark_incomplete(
                f"a result of {recorded.attribution.test_nodeid} was lost: {recorded.lost}"
            )

    def _put(self, recorded: RecordedResult) -> tuple[int, int]:
        """Store the result as the report carries it: stamped, attributed on the record."""
        from rampart.reporting._internal import record_attribution

        stamped = recorded.stamped()
        nodeid, index = record_attribution(stamped)
        return self._store.put(stamped, pytest_nodeid=nodeid, result_index=index)

    def record_unit(self, unit: FinishedUnit) -> None:
        """Record a finished unit's results, then tell the subscribers about the unit."""
        for recorded in unit.results:
            self.record(recorded)
        for subscriber in self._subscribers:
            subscriber(unit)

    def subscribe(self, subscriber: Callable[[FinishedUnit], None]) -> None:
        """Call ``subscriber`` with every unit ``record_unit`` receives from now on."""
        self._subscribers.append(subscriber)

    def record_group(self, group: TrialGroupSummary) -> None:
        """Record a finished trial group's report entry."""
        self._groups.append(group)

    def record_cut_short_groups(self) -> None:
        """Give each trial group a Ctrl-C stopped before it finished its report entry.

        Such a group has clone results but no entry (its item never finished). Its
        entry is ``interrupted`` (``rampart.core._group_outcome.interrupted_group``),
        read from its clones' records (``rebuild_results``): in one process as on an
        xdist controller, whose workers' results come back from the journal.
        """
        from rampart.core._internal import rebuild_results
        from rampart.reporting._internal import UNCATEGORIZED, category_key, group_entry

        stated = {group.nodeid for group in self._groups}
        found: dict[str, tuple[RecordedResult, dict[int, list[Result]]]] = {}
        for recorded in self.results:
            attribution = recorded.attribution
            nodeid = attribution.group_nodeid
            if attribution.clone is None or recorded.result.population is None:
                continue
            if nodeid not in stated:
                _, clones = found.setdefault(nodeid, (recorded, {}))
                clones.setdefault(attribution.clone, []).append(recorded.result)
        for nodeid, (first, clones) in found.items():
            category = category_key(first.result)
            self._groups.append(
                group_entry(
                    rebuild_results(clones, interrupted=True),
                    nodeid=nodeid,
                    test_name=first.attribution.group_name,
                    harm_category=None if category == UNCATEGORIZED else category,
                    worker=first.attribution.worker,
                )
            )

    def mark_interrupted(self) -> None:
        """A KeyboardInterrupt stopped the run: the report says so and shows what finished."""
        self._interrupted = True

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

    def worker_ready(self, worker: str) -> None:
        """A worker came up: it takes a slot a crashed worker freed, or a new one."""
        if worker in self._workers:
            return
        self._workers.add(worker)
        if self._freed_slots:
            self._freed_slots -= 1
            self._replaced += 1
        else:
            self._slots += 1

    def worker_crashed(self, worker: str) -> None:
        """A worker died; xdist may start a replacement in its slot."""
        self.worker_seen(worker)
        self._freed_slots += 1

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
    def groups(self) -> tuple[TrialGroupSummary, ...]:
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
    def worker_slots(self) -> int:
        """How many workers ran side by side: distinct workers, less those that only
        replaced a crashed one (xdist restarts a crashed worker under a new id)."""
        return max(self._slots, len(self._workers) - self._replaced)

    @property
    def workers_replaced(self) -> int:
        return self._replaced

    @property
    def backends(self) -> frozenset[str]:
        return frozenset(self._backends)

    @property
    def limit_statistics(self) -> tuple[dict[str, Any], ...]:
        return tuple(self._limit_statistics)

    @property
    def interrupted(self) -> bool:
        return self._interrupted

    @property
    def failed(self) -> bool:
        """The run must not exit 0: it is incomplete, or a report was not written."""
        return bool(self._incomplete or self._sink_failures)

    def full_result(self, recorded: RecordedResult) -> Result:
        """The full result behind a ledger entry, as reported (stamped), read back from
        the store."""
        from rampart.reporting._internal import restore_unusable_confidences

        if recorded.stored_at is None:
            return recorded.stamped()
        result = self._store.get(recorded.stored_at)
        return restore_unusable_confidences(result, recorded.unusable_confidences)

    def report_results(self) -> StoredResults:
        """The results as the report carries them: in report order, stamped, each read
        from the store only when a sink reads it."""
        from rampart.reporting._internal import StoredResults

        ordered = self.results
        # A group a Ctrl-C cut short has no counts to stamp (``rebuild_group`` then
        # sees its clones as they were recorded).
        finished = {group.nodeid: group for group in self._groups if not group.interrupted}
        marks = self.run_marks()

        def load(index: int) -> Result:
            entry = ordered[index]
            result = _with_group_facts(self.full_result(entry), entry, finished)
            if marks is not None:
                result = attrs.evolve(result, metadata={**result.metadata, RUN_KEY: marks})
            return result

        def record_text(index: int) -> str | None:
            entry = ordered[index]
            if entry.stored_at is None or entry.unusable_confidences or marks is not None:
                return None  # the report needs the live values: load the result
            attribution = entry.attribution
            if attribution.clone is not None and attribution.group_nodeid in finished:
                return None  # a finished group's clone: stamped with the group's facts
            return self._store.text(entry.stored_at)

        return StoredResults([entry.result for entry in ordered], load, record_text=record_text)

    def run_marks(self) -> dict[str, Any] | None:
        """What every result of an interrupted or incomplete run carries under
        ``RUN_KEY`` (so a trace alone says so); ``None`` for a clean run."""
        if not (self._interrupted or self._incomplete):
            return None
        return {
            "run_id": self.run_id,
            "interrupted": self._interrupted,
            "incomplete": bool(self._incomplete),
            "incomplete_reasons": list(self._incomplete),
        }

    def close(self) -> None:
        """Drop the store (its file is anonymous: nothing remains on disk)."""
        self._store.close()


def _with_group_facts(
    result: Result, entry: RecordedResult, finished: dict[str, TrialGroupSummary]
) -> Result:
    """A finished group's clone result, its population stamped with what the group's
    verdict counted (``PopulationRef.executed`` / ``no_result``), so a saved run can be
    judged again (``rampart.core._group_outcome.rebuild_group``)."""
    population = result.population
    group = finished.get(entry.attribution.group_nodeid)
    if population is None or group is None or entry.attribution.clone is None:
        return result
    stamped = attrs.evolve(population, executed=group.executed, no_result=group.counts.no_result)
    return attrs.evolve(result, population=stamped)


def _report_order(recorded: RecordedResult) -> tuple[str, int, int, int, str]:
    return recorded.attribution.sort_key()
