"""Moving results from xdist workers to the controller, and noticing when some went missing.

Each test report a worker sends carries the test's results as canonical
``rampart.trace.v2`` records (text, never pickle) inside a small versioned envelope, plus
its trial-group line. A result too large for the cap, or outside the canonical value
domain, is replaced by an ERROR result that says so and names the test, so a loss is
always visible. Workers count what they streamed; the controller compares that count
with what arrived, and a crashed worker or a mismatch marks the run incomplete.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from rampart._checks import invalid
from rampart._text import strip_ansi
from rampart.core.result import Result, SafetyStatus

if TYPE_CHECKING:
    from rampart.pytest_plugin._summary import GroupLine

__all__ = ["ENVELOPE_SCHEMA", "decode_envelope", "encode_envelope"]

ENVELOPE_SCHEMA = "rampart.xdist.v1"
REPORT_ATTRIBUTE = "rampart_payload"
STREAMED_KEY = "rampart_streamed_results"
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
MIN_MAX_BYTES = 4096


LOSS_KEY = "_rampart_transport_truncated"


def _loss_marker(
    result: Result, reason: str, extra: dict[str, Any], *, where: str = "xdist transport"
) -> Result:
    keep = {
        key: value
        for key, value in result.metadata.items()
        if key in ("_pytest_test_name", "_pytest_nodeid", "_rampart_result_index")
    }
    return Result(
        status=SafetyStatus.ERROR,
        summary=f"Result lost in {where}: {reason}",
        observability_level=result.observability_level,
        harm_category=result.harm_category,
        strategy=result.strategy,
        metadata={
            **keep,
            LOSS_KEY: True,
            "_rampart_original_status": result.status.value,
            **extra,
        },
    )


def recordable(result: Result) -> tuple[Result, str | None]:
    """``result`` if the canonical codec can record it, else an ERROR marker and why.

    Applied to every result in a single-process run too, so a run reports the same
    thing with and without xdist, and the loss marks the run incomplete.
    """
    from rampart.codec._record import ResultRecord, serialize_record
    from rampart.core.errors import SchemaError

    try:
        serialize_record(record=ResultRecord(result=result))
    except SchemaError as exc:
        reason = f"not recordable by the trace codec ({exc})"
        return _loss_marker(result, reason, {}, where="reporting"), reason
    return result, None


def loss_reason(result: Result) -> str | None:
    """Why a marker stands in for a lost result (None for a real result)."""
    if result.metadata.get(LOSS_KEY) is not True:
        return None
    nodeid = result.metadata.get("_pytest_nodeid", "?")
    return f"a result of {nodeid} was lost: {result.summary}"


def encode_envelope(
    results: list[Result], group: GroupLine | None, *, max_bytes: int, worker: str
) -> dict[str, Any]:
    """The JSON-safe payload a worker attaches to a test report."""
    from rampart.codec._record import ResultRecord, serialize_record
    from rampart.core.errors import SchemaError

    records: list[str] = []
    for result in results:
        prepared = attrs.evolve(
            result,
            summary=strip_ansi(result.summary),
            metadata={**result.metadata, "_rampart_source_worker": worker},
        )
        try:
            text = serialize_record(record=ResultRecord(result=prepared))
        except SchemaError as exc:
            text = serialize_record(
                record=ResultRecord(result=_loss_marker(prepared, f"not serializable ({exc})", {}))
            )
        size = len(text.encode())
        if size > max_bytes:
            marker = _loss_marker(
                prepared,
                f"{size} bytes exceeds the {max_bytes}-byte limit (--rampart-xdist-max-bytes)",
                {"_rampart_original_size_bytes": size, "_rampart_limit_bytes": max_bytes},
            )
            text = serialize_record(record=ResultRecord(result=marker))
        records.append(text)
    return {
        "schema": ENVELOPE_SCHEMA,
        "records": records,
        "group": None if group is None else attrs.asdict(group),
    }


def decode_envelope(payload: object) -> tuple[list[Result], GroupLine | None]:
    """Results and group line from a worker payload; ``ValueError`` if it is not one."""
    from rampart.codec._record import deserialize_record
    from rampart.pytest_plugin._summary import GroupLine

    if not isinstance(payload, dict) or payload.get("schema") != ENVELOPE_SCHEMA:
        schema = payload.get("schema") if isinstance(payload, dict) else None
        raise ValueError(f"unsupported rampart xdist payload schema {schema!r}")
    records = payload.get("records")
    if not isinstance(records, list) or not all(isinstance(r, str) for r in records):
        raise invalid(
            "rampart xdist payload", "records", "a list of strings", records, error=ValueError
        )
    results = []
    for text in records:
        result = deserialize_record(data=text).result
        results.append(attrs.evolve(result, summary=strip_ansi(result.summary)))
    raw_group = payload.get("group")
    group = None if raw_group is None else GroupLine(**raw_group)
    return results, group


class XdistController:
    """Controller-side hooks, registered only when pytest-xdist is active.

    Kept apart from the session plugin because its hook names exist only when xdist is
    loaded (pytest rejects unknown ``pytest_*`` hooks).
    """

    def __init__(self, plugin: Any) -> None:
        self.plugin = plugin
        self.limits_directory: str | None = None

    def pytest_configure_node(self, node: Any) -> None:
        """Hand every worker the run's shared rate-limit bucket directory."""
        from rampart.pytest_plugin._limits import WORKERINPUT_KEY

        if self.limits_directory is None:
            import tempfile

            self.limits_directory = tempfile.mkdtemp(prefix="rampart-limits-")
        node.workerinput[WORKERINPUT_KEY] = self.limits_directory

    def pytest_unconfigure(self) -> None:
        if self.limits_directory is not None:
            import shutil

            shutil.rmtree(self.limits_directory, ignore_errors=True)

    def pytest_testnodeready(self, node: Any) -> None:
        self.plugin.workers_seen.add(_worker_id(node))

    def pytest_runtest_logreport(self, report: Any) -> None:
        payload = getattr(report, REPORT_ATTRIBUTE, None)
        node = getattr(report, "node", None)
        if payload is None or node is None:
            return
        worker = _worker_id(node)
        try:
            results, group = decode_envelope(payload)
        except Exception as exc:  # a lost payload marks the run incomplete
            self.plugin.incomplete_reasons.append(
                f"results of {report.nodeid} from worker {worker} could not be read: "
                f"{type(exc).__name__}: {exc}"
            )
            return
        self.plugin.received[worker] += len(results)
        for result in results:
            reason = loss_reason(result)
            if reason is not None:
                self.plugin.incomplete_reasons.append(reason)
        self.plugin.absorb(results, group)

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        worker = _worker_id(node)
        self.plugin.workers_seen.add(worker)
        if error is not None:
            self.plugin.incomplete_reasons.append(
                f"xdist worker {worker} crashed; results it had not streamed are lost ({error})"
            )
            return
        output = getattr(node, "workeroutput", None) or {}
        from rampart.pytest_plugin._limits import WORKEROUTPUT_KEY

        limit_statistics = output.get(WORKEROUTPUT_KEY)
        if isinstance(limit_statistics, list):
            self.plugin.worker_limit_statistics.extend(
                snapshot for snapshot in limit_statistics if isinstance(snapshot, dict)
            )
        expected = output.get(STREAMED_KEY)
        received = self.plugin.received[worker]
        if expected is None:
            self.plugin.incomplete_reasons.append(
                f"xdist worker {worker} finished without reporting its rampart result count"
            )
        elif expected != received:
            self.plugin.incomplete_reasons.append(
                f"xdist worker {worker} streamed {expected} results but the controller "
                f"received {received}"
            )

    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        del report, sched
        self.plugin.incomplete_reasons.append(
            f"{crashitem} crashed its xdist worker; its results are lost"
        )


def _worker_id(node: Any) -> str:
    gateway = getattr(node, "gateway", None)
    return str(getattr(gateway, "id", "?"))
