"""Moving results from xdist workers to the controller, and noticing when some went missing.

A worker (``XdistWorker``) journals each finished unit at once (the run journal is
shared by every process of the run) and attaches each test's results to its test
report in the envelope below, counting what it streamed; at its session end it puts
that count and its rate-limit and LLM statistics in its workeroutput. The controller
(``XdistController``) hands every worker the run's settings (run id, journal, resumed
journal), the shared rate-limit directory and the progress directory, records what
arrives on its run ledger, attributed to the worker that sent it, and compares each
worker's count with what arrived; a crashed worker, an unreadable payload or a
mismatch marks the run incomplete. ``--rampart-xdist-max-bytes`` (``add_options``)
caps one result's record. ``worker_count`` in the report counts worker *slots*: a worker xdist
starts to replace a crashed one takes the crashed one's slot.

Trust boundary: payloads come from our own workers, but are parsed as data (canonical
JSON records, checked envelope fields), never unpickled or evaluated.

The envelope: each test report an xdist worker sends carries the test's results as canonical
``rampart.trace.v2`` records (text, never pickle) inside a small versioned envelope:
the item's nodeid and name, per result its record, clone index and position (and,
for a marker, why the result was lost; for a result a resumed journal supplied, the
run it came from; for a trial of a population the test ran, its ``group``), plus the
report entries of the test's trial groups (``TrialGroupSummary``: its clone group, or
the populations it ran; written and read by the codec's converter like the JSON
report's ``trial_groups``) and any warnings for the terminal.
Entries are encoded as each trial clone finishes (``encode_entries``), so a worker
holds text, not result objects, until the test's report leaves. The
attribution travels as data next to each record; the records themselves carry no
bookkeeping keys. The controller adds the worker id from the node that sent it.

A result too large for the cap, or outside the canonical value domain, is replaced by
an ERROR result that says so, keeping its attribution, so a loss is always visible.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from typing import TYPE_CHECKING, Any, TypeGuard

import attrs
import pytest

from rampart._checks import invalid
from rampart._text import strip_ansi
from rampart.core.errors import SchemaError
from rampart.pytest_plugin._journal import RUN_INPUT_KEY
from rampart.pytest_plugin._layers import (
    LIMITS_OUTPUT_KEY,
    LLM_OUTPUT_KEY,
    WORKERINPUT_KEY,
    LimitTracker,
    LLMRunStatistics,
    export_shared_directory,
)
from rampart.pytest_plugin._options import add_option, option_int
from rampart.pytest_plugin._progress import PROGRESS_DIR_KEY
from rampart.pytest_plugin._report import backend_of
from rampart.pytest_plugin._worker_stop import WORKERS_KEY, WorkerStops

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.core.result import Result
    from rampart.pytest_plugin._journal import JournalWriter
    from rampart.pytest_plugin._ledger import FinishedUnit, RecordedResult, RunLedger
    from rampart.pytest_plugin._progress import ProgressSession
    from rampart.reporting._internal import TrialGroupSummary

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ENVELOPE_SCHEMA",
    "MIN_MAX_BYTES",
    "REPORT_ATTRIBUTE",
    "STREAMED_KEY",
    "XdistController",
    "XdistWorker",
    "add_options",
    "decode_envelope",
    "encode_entries",
    "encode_envelope",
    "envelope_notes",
    "make_envelope",
    "max_bytes",
]

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
MIN_MAX_BYTES = 4096
_MAX_BYTES_HELP = "Largest serialized result an xdist worker sends (default 16 MiB, min 4096)."


def add_options(parser: pytest.Parser) -> None:
    """``--rampart-xdist-max-bytes`` and its ini option."""
    add_option(
        parser,
        "rampart_xdist_max_bytes",
        metavar="BYTES",
        help=_MAX_BYTES_HELP,
        ini=_MAX_BYTES_HELP,
    )


def max_bytes(config: pytest.Config) -> int:
    """The cap on one result's record (checked in every process, xdist or not)."""
    value = option_int(config, "rampart_xdist_max_bytes", minimum=MIN_MAX_BYTES)
    return DEFAULT_MAX_BYTES if value is None else value


_OWNER = "rampart xdist payload"


ENVELOPE_SCHEMA = "rampart.xdist.v4"


def _transport_text(result: Result, max_bytes: int) -> tuple[str, str | None]:
    """The record text to send for ``result``, and why it is a marker (None if not)."""
    from rampart.codec import ResultRecord, serialize_record
    from rampart.pytest_plugin._ledger import loss_marker

    try:
        text = serialize_record(record=ResultRecord(result=result))
    except SchemaError as exc:
        marker = loss_marker(result, f"not serializable ({exc})", where="xdist transport")
        return serialize_record(record=ResultRecord(result=marker)), marker.summary
    size = len(text.encode())
    if size <= max_bytes:
        return text, None
    marker = loss_marker(
        result,
        f"{size} bytes exceeds the {max_bytes}-byte limit (--rampart-xdist-max-bytes)",
        where="xdist transport",
        _rampart_original_size_bytes=size,
        _rampart_limit_bytes=max_bytes,
    )
    return serialize_record(record=ResultRecord(result=marker)), marker.summary


def encode_entries(results: Sequence[RecordedResult], *, max_bytes: int) -> list[dict[str, Any]]:
    """The envelope entries of ``results``: canonical record text and attribution."""
    entries = []
    for recorded in results:
        prepared = attrs.evolve(recorded.result, summary=strip_ansi(recorded.result.summary))
        text, lost = _transport_text(prepared, max_bytes)
        entry: dict[str, Any] = {
            "record": text,
            "clone": recorded.attribution.clone,
            "index": recorded.attribution.index,
            "lost": recorded.lost if lost is None else lost,
        }
        if recorded.resumed_from is not None:
            entry["resumed"] = recorded.resumed_from
        if recorded.attribution.group:
            entry["group"] = recorded.attribution.group
        entries.append(entry)
    return entries


def make_envelope(
    *,
    nodeid: str,
    name: str,
    entries: list[dict[str, Any]],
    groups: Sequence[TrialGroupSummary] = (),
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """The JSON-safe payload a worker attaches to the test report of ``nodeid``."""
    payload: dict[str, Any] = {
        "schema": ENVELOPE_SCHEMA,
        "nodeid": nodeid,
        "name": name,
        "results": entries,
        "groups": [group.to_json() for group in groups],
    }
    if notes:
        payload["notes"] = list(notes)
    return payload


def encode_envelope(
    *,
    nodeid: str,
    name: str,
    results: Sequence[RecordedResult],
    groups: Sequence[TrialGroupSummary] = (),
    max_bytes: int,
) -> dict[str, Any]:
    """The whole payload at once: ``make_envelope`` over ``encode_entries(results)``."""
    entries = encode_entries(results, max_bytes=max_bytes)
    return make_envelope(nodeid=nodeid, name=name, entries=entries, groups=groups)


def envelope_notes(payload: object) -> list[str]:
    """The warnings a worker attached (strings only; anything else is ignored)."""
    notes = payload.get("notes") if isinstance(payload, dict) else None
    if not isinstance(notes, list):
        return []
    return [note for note in notes if isinstance(note, str)]


def decode_envelope(
    payload: object, *, worker: str
) -> tuple[list[RecordedResult], list[TrialGroupSummary]]:
    """Results and groups from a worker payload; ``ValueError`` if it is not one."""
    if not isinstance(payload, dict) or payload.get("schema") != ENVELOPE_SCHEMA:
        schema = payload.get("schema") if isinstance(payload, dict) else None
        raise ValueError(f"unsupported rampart xdist payload schema {schema!r}")
    nodeid, name = payload.get("nodeid"), payload.get("name")
    if not isinstance(nodeid, str) or not isinstance(name, str):
        raise invalid(_OWNER, "nodeid and name", "strings", (nodeid, name), error=ValueError)
    entries = payload.get("results")
    if not isinstance(entries, list):
        raise invalid(_OWNER, "results", "a list", entries, error=ValueError)
    results = [_decode_entry(entry, nodeid=nodeid, name=name, worker=worker) for entry in entries]
    raw_groups = payload.get("groups")
    if not isinstance(raw_groups, list):
        raise invalid(_OWNER, "groups", "a list", raw_groups, error=ValueError)
    groups = [_decode_group(raw, nodeid=nodeid, worker=worker) for raw in raw_groups]
    return results, groups


def _decode_group(raw: object, *, nodeid: str, worker: str) -> TrialGroupSummary:
    """A group entry of the test ``nodeid``: its clone group, or one of its populations."""
    from rampart.reporting._internal import TrialGroupSummary

    try:
        group = TrialGroupSummary.from_json(raw)
    except ValueError as exc:
        raise ValueError(f"{_OWNER}: group: {exc}") from None
    if not _is_group_of(group.nodeid, nodeid):
        raise invalid(
            _OWNER,
            "group.nodeid",
            f"{nodeid!r} or a population of it",
            group.nodeid,
            error=ValueError,
        )
    return attrs.evolve(group, worker=worker)


def _is_group_of(group_nodeid: str, nodeid: str) -> bool:
    """``group_nodeid`` names a trial group of the test ``nodeid``."""
    suffix = group_nodeid.removeprefix(nodeid)
    if suffix == group_nodeid:
        return False
    number = suffix.removeprefix("[population-").removesuffix("]")
    from rampart.pytest_plugin._ledger import population_suffix

    return suffix == "" or (number.isdecimal() and population_suffix(int(number)) == suffix)


def _decode_entry(entry: object, *, nodeid: str, name: str, worker: str) -> RecordedResult:
    from rampart.codec import deserialize_record
    from rampart.pytest_plugin._ledger import Attribution, RecordedResult

    if not isinstance(entry, dict):
        raise invalid(_OWNER, "results[]", "an object", entry, error=ValueError)
    text, clone, index, lost, resumed, group = (
        entry.get(key) for key in ("record", "clone", "index", "lost", "resumed", "group")
    )
    if not isinstance(text, str):
        raise invalid(_OWNER, "record", "a string", text, error=ValueError)
    if clone is not None and not _is_count(clone):
        raise invalid(_OWNER, "clone", "an int >= 0 or null", clone, error=ValueError)
    if not _is_count(index):
        raise invalid(_OWNER, "index", "an int >= 0", index, error=ValueError)
    if lost is not None and not isinstance(lost, str):
        raise invalid(_OWNER, "lost", "a string or null", lost, error=ValueError)
    if resumed is not None and not isinstance(resumed, str):
        raise invalid(_OWNER, "resumed", "a string or null", resumed, error=ValueError)
    if group is None:
        group = 0
    elif not (_is_count(group) and clone is not None):
        raise invalid(_OWNER, "group", "an int >= 0 on a clone's entry", group, error=ValueError)
    result = deserialize_record(data=text).result
    return RecordedResult(
        result=attrs.evolve(result, summary=strip_ansi(result.summary)),
        attribution=Attribution.of(
            result, nodeid=nodeid, name=name, clone=clone, index=index, worker=worker, group=group
        ),
        lost=lost,
        resumed_from=resumed,
    )


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


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
        llm: LLMRunStatistics | None = None,
        journal: JournalWriter | None = None,
    ) -> None:
        self._max_bytes = max_bytes
        self._limits = limits
        self._llm = llm
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

    def backend_seen(self, backend: str) -> None:
        """Nothing to do here: the backend rides on the call report to the controller."""

    def deliver(
        self,
        item: pytest.Item,
        report: pytest.TestReport | None,
        groups: Sequence[TrialGroupSummary],
    ) -> None:
        entries = self._pending.pop(item.nodeid, [])
        if report is None:
            return  # interrupted: no report leaves; the journal has what finished
        notes, self._notes = self._notes, []
        payload = make_envelope(
            nodeid=item.nodeid, name=item.name, entries=entries, groups=groups, notes=notes
        )
        setattr(report, REPORT_ATTRIBUTE, payload)
        self._streamed += len(entries)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        output = session.config.workeroutput  # type: ignore[attr-defined]
        output[STREAMED_KEY] = self._streamed
        output[LIMITS_OUTPUT_KEY] = self._limits.statistics()
        if self._llm is not None:
            output[LLM_OUTPUT_KEY] = self._llm.local()


class XdistController:
    """Controller-side hooks, registered only when pytest-xdist is active.

    Kept apart from the session's own hooks because these hook names exist only when
    xdist is loaded (pytest rejects unknown ``pytest_*`` hooks): every xdist-only hook
    of the plugin is here.
    """

    def __init__(
        self,
        ledger: RunLedger,
        *,
        run_input: dict[str, Any] | None = None,
        llm: LLMRunStatistics | None = None,
        progress: ProgressSession | None = None,
    ) -> None:
        self._ledger = ledger
        self._run_input = run_input
        self._llm = llm
        self._progress = progress
        self._received: Counter[str] = Counter()
        self._limits_directory: str | None = None
        self._stops = WorkerStops()

    def pytest_configure_node(self, node: Any) -> None:
        """Hand every worker the run's settings, the shared rate-limit bucket directory,
        the directory it announces itself in (``_worker_stop``) and (when progress is
        shown) the directory its progress goes to."""
        if self._limits_directory is None:
            self._limits_directory = tempfile.mkdtemp(prefix="rampart-limits-")
        node.workerinput[WORKERINPUT_KEY] = self._limits_directory
        node.workerinput[WORKERS_KEY] = self._stops.directory()
        if self._run_input is not None:
            node.workerinput[RUN_INPUT_KEY] = self._run_input
        directory = None if self._progress is None else self._progress.worker_directory()
        if directory is not None:
            node.workerinput[PROGRESS_DIR_KEY] = directory

    def stop_workers(self) -> None:
        """The controller's first Ctrl-C: interrupt the workers it did not reach."""
        self._stops.stop()

    def close(self) -> None:
        """Remove the rate-limit and workers' directories (at unconfigure, from
        ``_session.stop``)."""
        if self._limits_directory is not None:
            shutil.rmtree(self._limits_directory, ignore_errors=True)
        self._stops.close()

    def pytest_testnodeready(self, node: Any) -> None:
        self._ledger.worker_ready(_worker_id(node))

    def pytest_runtest_logreport(self, report: Any) -> None:
        backend = backend_of(report)
        if backend is not None:
            self._ledger.backend_seen(backend)
        payload = getattr(report, REPORT_ATTRIBUTE, None)
        node = getattr(report, "node", None)
        if payload is None or node is None:
            return
        worker = _worker_id(node)
        try:
            results, groups = decode_envelope(payload, worker=worker)
        except Exception as exc:  # a lost payload marks the run incomplete
            self._ledger.mark_incomplete(
                f"results of {report.nodeid} from worker {worker} could not be read: "
                f"{type(exc).__name__}: {exc}"
            )
            return
        self._received[worker] += len(results)
        for recorded in results:
            self._ledger.record(recorded)
        for group in groups:
            self._ledger.record_group(group)
        for note in envelope_notes(payload):
            self._ledger.warn(note)

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        worker = _worker_id(node)
        output = getattr(node, "workeroutput", None) or {}
        if self._llm is not None:
            self._llm.add_worker(output.get(LLM_OUTPUT_KEY))
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
        limit_statistics = output.get(LIMITS_OUTPUT_KEY)
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
