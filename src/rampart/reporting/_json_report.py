"""``JsonFileReportSink``: one timestamped JSON file per run, a projection of the codec.

Each result is serialized by the canonical codec, parsed back, and reshaped into the
flat report layout; no field of a result is encoded here a second time. One value is
read from the live result: an evaluation whose confidence is not a finite number
(NaN, an infinity, not a number at all) is reported with ``null`` confidence, as
RAMPART's report does (the canonical record, which needs a number, carries ``0.0``).

The file is written as the JSON encoder produces it, one result at a time
(``report_chunks``): a report of tens of thousands of results is never whole in
memory, whether its results are in memory or stored on disk (``StoredResults``, whose
stored canonical text is projected as it is, unless a confidence needs the live
value). Redaction is applied per result entry and to the rest of the document.

RAMPART's override points keep working: a subclass may override
``_serialize_result(result) -> dict`` (one result's entry; the file is still streamed,
one entry at a time) and ``_serialize_report(report) -> dict`` (the whole document,
then built in memory); the file is written from what they return (an enum's value or
the ``str`` of other values JSON does not know, ``null`` for a non-finite number,
redacted).
"""

from __future__ import annotations

import enum
import functools
import json
import math
from typing import TYPE_CHECKING, Any

from rampart._redact import redact, redact_data
from rampart._text import escape_hidden_json, strip_ansi
from rampart.reporting._canonical import canonical_body, check_run_metadata
from rampart.reporting._file_sink import ReportFileSink
from rampart.reporting._report import TestRunReport, summary_json
from rampart.reporting._stored import StoredResults, confidence_unusable

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from rampart.core.result import Result
    from rampart.reporting import _files

__all__ = ["JsonFileReportSink"]


def _project_eval(evaluation: dict[str, Any]) -> dict[str, Any]:
    projected = {
        "outcome": evaluation["outcome"],
        "confidence": evaluation.get("confidence", 1.0),
        "evidence": evaluation.get("evidence", []),
        "rationale": evaluation.get("rationale", ""),
    }
    if evaluation.get("undetermined_operands"):
        projected["undetermined_operands"] = evaluation["undetermined_operands"]
    return projected


def _project_turn(turn: dict[str, Any]) -> dict[str, Any]:
    request = turn["request"]
    response = turn["response"]
    projected: dict[str, Any] = {
        "turn_number": turn.get("turn_number", 0),
        "prompt": request.get("prompt"),
        "response_text": response["text"],
        "response_metadata": response.get("metadata", {}),
    }
    if response.get("tool_calls"):
        projected["tool_calls"] = [
            {
                "name": call["name"],
                "arguments": call.get("arguments", {}),
                "result": call.get("result"),
            }
            for call in response["tool_calls"]
        ]
    if response.get("side_effects"):
        projected["side_effects"] = [
            {"kind": effect["kind"], "details": effect.get("details", {})}
            for effect in response["side_effects"]
        ]
    evaluation = turn.get("eval_result")
    if evaluation is not None:
        projected["eval_outcome"] = evaluation["outcome"]
        projected["eval_confidence"] = evaluation.get("confidence", 1.0)
        projected["eval_rationale"] = evaluation.get("rationale", "")
        if evaluation.get("undetermined_operands"):
            projected["eval_undetermined_operands"] = evaluation["undetermined_operands"]
    if turn.get("driver_reasoning"):
        projected["driver_reasoning"] = turn["driver_reasoning"]
    return projected


def project_result(body: dict[str, Any]) -> dict[str, Any]:
    """Reshape a canonical result body into the report's per-result object."""
    final = body.get("final_trace_evaluation")
    projected: dict[str, Any] = {
        "safe": body["status"] == "safe",
        "status": body["status"],
        "summary": strip_ansi(body["summary"]),
        "harm_category": body.get("harm_category"),
        "strategy": body.get("strategy", ""),
        "observability_level": body["observability_level"],
        "duration_seconds": body.get("duration_seconds", 0.0),
        "metadata": body.get("metadata", {}),
        "turns": [_project_turn(turn) for turn in body.get("turns", [])],
        "final_trace_evaluation": None if final is None else _project_eval(final),
    }
    if body.get("trace_end_reason") is not None:
        projected["trace_end_reason"] = body["trace_end_reason"]
    if body.get("population") is not None:
        projected["population"] = body["population"]
    return projected


def _null_unusable_confidences(projected: dict[str, Any], result: Result) -> dict[str, Any]:
    """``projected`` with ``null`` where the live result's confidence is not a finite number."""
    final = projected.get("final_trace_evaluation")
    if final is not None and confidence_unusable(result.final_trace_evaluation):
        final["confidence"] = None
    for turn, live in zip(projected["turns"], result.turns, strict=False):
        if "eval_confidence" in turn and confidence_unusable(live.eval_result):
            turn["eval_confidence"] = None
    return projected


class _ProjectedResults(list):  # type: ignore[type-arg]
    """Some results' report entries, each projected while the JSON encoder iterates.

    A ``list`` to the encoder (which writes lists by iterating them), holding nothing:
    ``len`` and iteration answer from the report's results, one at a time. ``entry``
    projects one result (a subclass's ``_serialize_result`` when it has one).
    """

    def __init__(
        self,
        results: Sequence[Result],
        indices: list[int],
        entry: Callable[[Sequence[Result], int], dict[str, Any]] | None = None,
    ) -> None:
        super().__init__()
        self._results = results
        self._indices = indices
        self._entry = _entry if entry is None else entry

    def __len__(self) -> int:
        return len(self._indices)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for index in self._indices:
            yield redact_data(_json_safe(self._entry(self._results, index)))


def _json_safe(value: Any) -> Any:
    """``value`` with ``null`` for each non-finite float (a subclass's entries may
    carry one; the strict encoder would otherwise lose the whole report)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    return value


def _entry(results: Sequence[Result], index: int) -> dict[str, Any]:
    """Result ``index``'s report entry: projected from its stored record text when the
    results are stored that way (no decode and re-encode), else from the live result."""
    if isinstance(results, StoredResults):
        text = results.record_text(index)
        if text is not None:
            return project_result(json.loads(text)["result"])
    result = results[index]
    return _null_unusable_confidences(project_result(canonical_body(result, index)), result)


def build_document(
    report: TestRunReport,
    *,
    lazy: bool = False,
    entry: Callable[[Sequence[Result], int], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The whole report as a JSON-ready dict, keys in their documented order.

    With ``lazy`` the result entries are projected only while the document is encoded
    (for ``report_chunks``); otherwise they are built here. ``entry`` projects one
    result (default: the canonical projection). Raises :class:`ReportError` if a
    result is rejected by the codec or the run metadata is not JSON-safe.
    """
    check_run_metadata(report.metadata)
    by_category: dict[str, list[dict[str, Any]]] = {}
    for category, indices in report.category_indices().items():
        entries = _ProjectedResults(report.results, indices, entry)
        by_category[redact(category)] = entries if lazy else list(entries)
    return {
        "total_runs": report.total_runs,
        "passed": report.passed,
        "failed": report.failed,
        "undetermined": report.undetermined,
        "errors": report.errors,
        "no_result": report.no_result,
        "duration_seconds": report.duration_seconds,
        "metadata": report.metadata,
        "population_summary": summary_json(report.population_summary()),
        "by_harm_category": by_category,
        "trial_groups": [group.to_json() for group in report.trial_groups],
        "run": report.run.to_json(),
    }


def render_report(report: TestRunReport) -> bytes:
    """The UTF-8 file content: ``indent=2``, no NaN/Infinity, non-ASCII kept readable.

    The whole document passes the redaction policy (``rampart._redact``): the run
    metadata (limiter and LLM statistics, incomplete-run reasons) as well as the
    results, whose records the codec redacted already.
    """
    return b"".join(report_chunks(report))


def report_chunks(
    report: TestRunReport,
    *,
    entry: Callable[[Sequence[Result], int], dict[str, Any]] | None = None,
) -> Iterator[bytes]:
    """``render_report``'s bytes in pieces, each result encoded as the writer gets to it.

    The run metadata and every count are checked before the first piece, so a bad
    report fails before anything is written. Each result entry is redacted as it is
    produced; the rest of the document here.
    """
    document = build_document(report, lazy=True, entry=entry)
    document = {
        key: value if key == "by_harm_category" else redact_data(value)
        for key, value in document.items()
    }
    yield from _encode(document)


def _unknown(value: object) -> object:
    """A value JSON does not know, from a subclass's entries: an enum's value, else its
    ``str`` (RAMPART writes them with ``default=str``)."""
    if isinstance(value, enum.Enum):
        return value.value
    return str(value)


def _encode(document: dict[str, Any]) -> Iterator[bytes]:
    encoder = json.JSONEncoder(indent=2, allow_nan=False, ensure_ascii=False, default=_unknown)
    for chunk in encoder.iterencode(document):
        # A string is one chunk: C1 controls and bidi overrides become \u escapes.
        yield escape_hidden_json(chunk).encode("utf-8")
    yield b"\n"


class JsonFileReportSink(ReportFileSink):
    """Writes each report to ``<output_dir>/run_report_<UTC timestamp>.json``.

    The timestamp is ``%Y-%m-%dT%H-%M-%S-mmm`` (UTC, millisecond precision). If that
    name already exists, ``_<random uuid hex>`` is appended before ``.json``. The file
    appears atomically and never replaces an existing report. The directory is created
    on first write. Building and writing happen in a worker thread, so the event loop
    is not blocked; a result the canonical codec rejects raises :class:`ReportError`
    and nothing is written.
    """

    suffix = ".json"

    def _content(self, report: TestRunReport) -> _files.Content:
        own = type(self)
        if own._serialize_report is not JsonFileReportSink._serialize_report:
            return functools.partial(self._overridden_report, report)
        if own._serialize_result is not JsonFileReportSink._serialize_result:
            return functools.partial(report_chunks, report, entry=self._overridden_entry)
        return functools.partial(report_chunks, report)

    def _serialize_report(self, report: TestRunReport) -> dict[str, Any]:
        """The whole report as a JSON-ready dict (RAMPART's override point).

        Keys in their documented order; each result entry is ``_serialize_result``'s.
        Override it to reshape the whole document; the file then holds what it
        returns.
        """
        return build_document(report, entry=self._overridden_entry)

    def _serialize_result(self, result: Result) -> dict[str, Any]:
        """One result's report entry as a JSON-ready dict (RAMPART's override point).

        The flat projection of the result's canonical record (``safe``, ``status``,
        ``summary``, ``harm_category``, ``strategy``, ``observability_level``,
        ``duration_seconds``, ``metadata``, ``turns``, ``final_trace_evaluation``, ...),
        with ``null`` for a confidence that is not a finite number. Override it to add
        or change fields; the file is still written one entry at a time.
        """
        return _null_unusable_confidences(project_result(canonical_body(result, 0)), result)

    def _overridden_entry(self, results: Sequence[Result], index: int) -> dict[str, Any]:
        if type(self)._serialize_result is JsonFileReportSink._serialize_result:
            return _entry(results, index)
        return self._serialize_result(results[index])

    def _overridden_report(self, report: TestRunReport) -> Iterator[bytes]:
        return _encode(redact_data(_json_safe(self._serialize_report(report))))
