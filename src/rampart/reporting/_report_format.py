"""The JSON report format, written and read in one place.

A JSON report (``JsonFileReportSink``) is a flat projection of canonical
``rampart.trace.v2`` records: each result's canonical body is reshaped into the
report's per-result entry (``project_result``), and ``rampart report`` / ``diff`` /
``validate`` map an entry back to the body it was projected from (``entry_body``) and
read it with the codec's decoder (``entry_record``), so every decoder rule applies to
a report too. The turn keys the report renames (``prompt``, ``response_text``,
``eval_outcome``, ...) are one table (``_TURN_FIELDS``): the writer, the reader and the
renaming of the decoder's messages (``report_message``) all read it. The report
leaves out attachments, injections and timestamps, so a record rebuilt from it holds
none of them (an attachment-only request gets one placeholder attachment, since a
request needs a prompt or an attachment); the JSONL trace has everything.

The document's top level (``report_document``) is the counts, the run metadata, the
population summary, the results by harm category, the trial groups
(``TrialGroupSummary``), the run section (``RunInfo``) and the risk-framework
coverage matrix (``rampart.risk.RiskCoverage``), in that order
(``REPORT_KEYS`` are the ones every report has). ``report_shape_problems`` and
``report_count_problems`` check a parsed report's top level against the format and
against its own results.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import attrs

from rampart._text import strip_ansi
from rampart.core.result import HarmCategory, SafetyStatus
from rampart.reporting._report import summary_json
from rampart.reporting._stored import confidence_unusable

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from rampart.codec import ResultRecord
    from rampart.core.result import Result
    from rampart.reporting._report import TestRunReport

__all__ = [
    "OMITTED_ATTACHMENT",
    "REPORT_KEYS",
    "category_label",
    "entry_body",
    "entry_document",
    "entry_record",
    "iter_report_entries",
    "null_unusable_confidences",
    "project_result",
    "report_count_problems",
    "report_document",
    "report_message",
    "report_records",
    "report_shape_problems",
]

#: The report's counts of results by status, in document order.
_COUNT_KEYS = ("total_runs", "passed", "failed", "undetermined", "errors")
#: The trial clones that ran and recorded no result (after ``errors``; optional: reports
#: of older producers lack it).
NO_RESULT_KEY = "no_result"
#: The keys every JSON report has, in document order (``trial_groups`` and ``run``
#: follow; reports of older producers lack them).
REPORT_KEYS = (
    *_COUNT_KEYS,
    "duration_seconds",
    "metadata",
    "population_summary",
    "by_harm_category",
)
_KNOWN_CATEGORIES = {category.value for category in HarmCategory} | {"uncategorized"}

# What a JSON report writes for an attachment-only request: the prompt is null and the
# attachments are left out. A request needs one or the other, so the rebuilt record
# gets this stand-in (its text says where the real attachment is).
OMITTED_ATTACHMENT = {
    "content": "[attachments are not in the JSON report; the JSONL trace has them]",
    "id": "omitted-from-json-report",
    "format": "text",
}

_REQUIRED: Final[Any] = object()


@attrs.frozen
class _Field:
    """One key of a report entry and the record field it is projected from.

    ``default`` is what the writer writes (and the reader assumes) when the record has
    none (``_REQUIRED``: the record always has it); with ``when_set`` the key is
    written only for a non-empty value; ``shape`` reshapes the written value.
    """

    key: str
    part: str
    name: str
    default: Any = _REQUIRED
    when_set: bool = False
    shape: Callable[[Any], Any] | None = None


def _tool_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"name": call["name"], "arguments": call.get("arguments", {}), "result": call.get("result")}
        for call in calls
    ]


def _side_effects(effects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"kind": effect["kind"], "details": effect.get("details", {})} for effect in effects]


# A turn entry: ``turn_number``, these keys in this order, then ``driver_reasoning``.
_TURN_FIELDS = (
    _Field("prompt", "request", "prompt", default=None),
    _Field("response_text", "response", "text"),
    _Field("response_metadata", "response", "metadata", default={}),
    _Field("tool_calls", "response", "tool_calls", default=[], when_set=True, shape=_tool_calls),
    _Field(
        "side_effects", "response", "side_effects", default=[], when_set=True, shape=_side_effects
    ),
    _Field("eval_outcome", "eval_result", "outcome"),
    _Field("eval_confidence", "eval_result", "confidence", default=1.0),
    _Field("eval_rationale", "eval_result", "rationale", default=""),
    _Field("eval_undetermined_operands", "eval_result", "undetermined_operands", when_set=True),
)

# An evaluation (``final_trace_evaluation``): its own keys, unrenamed.
_EVAL_FIELDS = (
    _Field("outcome", "", "outcome"),
    _Field("confidence", "", "confidence", default=1.0),
    _Field("evidence", "", "evidence", default=[]),
    _Field("rationale", "", "rationale", default=""),
    _Field("undetermined_operands", "", "undetermined_operands", when_set=True),
)

# A result entry: ``safe``, these keys, ``turns``, ``final_trace_evaluation``, then
# ``trace_end_reason`` and ``population`` when the record has them.
_RESULT_FIELDS = (
    _Field("status", "", "status"),
    _Field("summary", "", "summary", shape=strip_ansi),
    _Field("harm_category", "", "harm_category", default=None),
    _Field("strategy", "", "strategy", default=""),
    _Field("observability_level", "", "observability_level"),
    _Field("duration_seconds", "", "duration_seconds", default=0.0),
    _Field("metadata", "", "metadata", default={}),
)
_OPTIONAL_RESULT_KEYS = ("trace_end_reason", "population")


def _fresh(value: Any) -> Any:
    """A default that is a container, as a new one (entries never share it)."""
    return type(value)() if isinstance(value, dict | list) else value


def _write(fields: tuple[_Field, ...], parts: dict[str, Any], into: dict[str, Any]) -> None:
    """Project the record ``parts`` (by part name) into ``into``, field by field."""
    for field in fields:
        source = parts.get(field.part)
        if source is None:
            continue  # a turn without an evaluation
        if field.default is _REQUIRED:
            value = source[field.name]
        else:
            value = source.get(field.name, _fresh(field.default))
        if field.when_set and not value:
            continue
        into[field.key] = value if field.shape is None else field.shape(value)


def _read(fields: tuple[_Field, ...], entry: dict[str, Any], into: dict[str, Any]) -> None:
    """The record fields of ``entry`` (as the writer wrote them) into ``into``, by part.

    A key the entry lacks takes the writer's default; a required one stays missing,
    for the decoder to name. A ``null`` confidence is the record's ``0.0`` (the
    report writes ``null`` where the live confidence was not a finite number).
    """
    for field in fields:
        if field.key in entry:
            value = entry[field.key]
        elif field.default is _REQUIRED or field.when_set:
            continue
        else:
            value = _fresh(field.default)
        if field.name == "confidence" and value is None:
            value = 0.0
        target = into.setdefault(field.part, {}) if field.part else into
        target[field.name] = value


# --------------------------------------------------------------------------- writing


def _project_turn(turn: dict[str, Any]) -> dict[str, Any]:
    projected: dict[str, Any] = {"turn_number": turn.get("turn_number", 0)}
    _write(_TURN_FIELDS, turn, projected)
    if turn.get("driver_reasoning"):
        projected["driver_reasoning"] = turn["driver_reasoning"]
    return projected


def _project_eval(evaluation: dict[str, Any]) -> dict[str, Any]:
    projected: dict[str, Any] = {}
    _write(_EVAL_FIELDS, {"": evaluation}, projected)
    return projected


def project_result(body: dict[str, Any]) -> dict[str, Any]:
    """Reshape a canonical result body into the report's per-result object."""
    projected: dict[str, Any] = {"safe": body["status"] == SafetyStatus.SAFE.value}
    _write(_RESULT_FIELDS, {"": body}, projected)
    projected["turns"] = [_project_turn(turn) for turn in body.get("turns", [])]
    final = body.get("final_trace_evaluation")
    projected["final_trace_evaluation"] = None if final is None else _project_eval(final)
    for key in _OPTIONAL_RESULT_KEYS:
        if body.get(key) is not None:
            projected[key] = body[key]
    return projected


def null_unusable_confidences(projected: dict[str, Any], result: Result) -> dict[str, Any]:
    """``projected`` with ``null`` where the live result's confidence is not a finite number."""
    final = projected.get("final_trace_evaluation")
    if final is not None and confidence_unusable(result.final_trace_evaluation):
        final["confidence"] = None
    for turn, live in zip(projected["turns"], result.turns, strict=False):
        if "eval_confidence" in turn and confidence_unusable(live.eval_result):
            turn["eval_confidence"] = None
    return projected


def report_document(report: TestRunReport, by_harm_category: dict[str, Any]) -> dict[str, Any]:
    """The whole report as a JSON-ready dict, keys in their documented order, around
    its result entries (``by_harm_category``: the sink projects them, lazily)."""
    counts = (report.total_runs, report.passed, report.failed, report.undetermined, report.errors)
    return {
        **dict(zip(_COUNT_KEYS, counts, strict=True)),
        NO_RESULT_KEY: report.no_result,
        "duration_seconds": report.duration_seconds,
        "metadata": report.metadata,
        "population_summary": summary_json(report.population_summary()),
        "by_harm_category": by_harm_category,
        "trial_groups": [group.to_json() for group in report.trial_groups],
        "run": report.run.to_json(),
        "coverage": report.coverage().to_json(),
    }


# --------------------------------------------------------------------------- reading


def category_label(category: object, position: int) -> str:
    """How a ``by_harm_category`` key is named in a message: the built-in name, or its
    position (a custom category is producer text)."""
    if isinstance(category, str) and category in _KNOWN_CATEGORIES:
        return f".{category}"
    return f"[<category #{position}>]"


def iter_report_entries(document: dict[str, Any]) -> Iterator[tuple[str, str, object]]:
    """``(category, location, entry)`` for every result entry of a parsed report.

    ``location`` is the entry's JSON path (``$.by_harm_category.jailbreak[3]``). A
    ``by_harm_category`` that is not an object of arrays is a ``ValueError`` naming it.
    """
    groups = document.get("by_harm_category")
    if not isinstance(groups, dict):
        raise ValueError("$.by_harm_category: expected an object of arrays")
    for position, (category, entries) in enumerate(groups.items()):
        label = category_label(category, position)
        if not isinstance(entries, list):
            raise ValueError(f"$.by_harm_category{label}: expected an array")
        for index, entry in enumerate(entries):
            yield category, f"$.by_harm_category{label}[{index}]", entry


def _turn_body(turn: object) -> object:
    if not isinstance(turn, dict):
        return turn  # the decoder says "expected an object"
    body: dict[str, Any] = {
        "request": {"attachments": []},
        "response": {},
        "turn_number": turn.get("turn_number", 0),
    }
    _read(_TURN_FIELDS, turn, body)
    if body["request"]["prompt"] is None:
        body["request"]["attachments"] = [dict(OMITTED_ATTACHMENT)]
    if "eval_outcome" not in turn:
        body.pop("eval_result", None)  # the writer writes no evaluation keys without one
    if "driver_reasoning" in turn:
        body["driver_reasoning"] = turn["driver_reasoning"]
    return body


def entry_body(entry: object) -> object:
    """The canonical result body a JSON report entry was projected from (see the module).

    Missing keys stay missing and wrong types stay wrong, for the decoder to name.
    """
    if not isinstance(entry, dict):
        return entry
    keys = [field.key for field in _RESULT_FIELDS] + list(_OPTIONAL_RESULT_KEYS)
    body: dict[str, Any] = {key: entry[key] for key in keys if key in entry}
    turns = entry.get("turns", [])
    body["turns"] = [_turn_body(turn) for turn in turns] if isinstance(turns, list) else turns
    final = entry.get("final_trace_evaluation")
    if isinstance(final, dict):
        evaluation = dict(final)
        if evaluation.get("confidence", 1.0) is None:
            evaluation["confidence"] = 0.0  # the report's null is the record's 0.0
        body["final_trace_evaluation"] = evaluation
    elif final is not None:
        body["final_trace_evaluation"] = final
    return body


# Record paths of the turn fields the report renames, as the report names them.
_REPORT_NAMES = tuple(
    (re.compile(rf"\.{field.part}\.{field.name}\b"), f".{field.key}") for field in _TURN_FIELDS
)


def report_message(message: str, location: str) -> str:
    """A decoder message about a rebuilt record, located in the report instead."""
    if message.startswith("$.result"):
        message = location + message[len("$.result") :]
    elif message.startswith("$"):
        message = location + message[1:]
    for pattern, name in _REPORT_NAMES:
        message = pattern.sub(name, message)
    return message


def entry_document(entry: object) -> dict[str, Any]:
    """The record document (version and body) a report entry stands for."""
    from rampart.codec import TRACE_SCHEMA_VERSION

    return {"version": TRACE_SCHEMA_VERSION, "result": entry_body(entry)}


def entry_record(entry: object, location: str) -> ResultRecord:
    """The record a report entry stands for, read by the codec's decoder.

    Raises ``SchemaError`` whose message is located in the report (``location``).
    """
    from rampart.codec import deserialize_record
    from rampart.core.errors import SchemaError
    from rampart.reporting._canonical import record_attribution

    if (
        isinstance(entry, dict)
        and "safe" in entry
        and "status" in entry
        and entry["safe"] is not (entry["status"] == SafetyStatus.SAFE.value)
    ):
        # ``safe`` is derived from ``status``: the status is what was edited (or lost).
        raise SchemaError(
            f"{location}.status: {entry['status']!r} disagrees with safe: "
            f"{json.dumps(entry['safe'])} (the entry was edited)"
        )
    try:
        text = json.dumps(entry_document(entry), ensure_ascii=False)
        record = deserialize_record(data=text)
    except SchemaError as error:
        raise SchemaError(report_message(str(error), location)) from None
    nodeid, index = record_attribution(record.result)
    if nodeid is None and index is None:
        return record
    return type(record)(result=record.result, pytest_nodeid=nodeid, result_index=index)


def report_records(document: dict[str, Any]) -> list[ResultRecord]:
    """Every result of a parsed report as its record, in document order.

    Raises ``SchemaError`` (or ``ValueError`` for a malformed ``by_harm_category``) at
    the first entry that is not one, located in the report.
    """
    return [
        entry_record(entry, location)
        for _category, location, entry in iter_report_entries(document)
    ]


def _count(records: Sequence[ResultRecord], status: SafetyStatus | None) -> int:
    return sum(1 for record in records if status is None or record.result.status is status)


def _no_result(document: dict[str, Any]) -> int:
    """The clones the report says ran without a result (0 for a report from before the
    key, or one whose value ``report_shape_problems`` rejects)."""
    value = document.get(NO_RESULT_KEY, 0)
    return value if type(value) is int and value >= 0 else 0


def report_count_problems(document: dict[str, Any], records: list[ResultRecord]) -> list[str]:
    """The report's own numbers that its results (and its trial groups' no-result
    clones) contradict (a report never misstates)."""
    problems = []
    statuses = (None, SafetyStatus.SAFE, SafetyStatus.UNSAFE, SafetyStatus.UNDETERMINED)
    population = {
        key: _count(records, status)
        for key, status in zip(_COUNT_KEYS, (*statuses, SafetyStatus.ERROR), strict=True)
    }
    no_result = _no_result(document)
    # Every clone that ran is counted: total_runs is the results plus the no-result clones.
    counts = {**population, "total_runs": population["total_runs"] + no_result}
    for key, expected in counts.items():
        if key in document and document[key] != expected:
            problems.append(f"$.{key}: the results give {expected}")
    groups = document.get("trial_groups")
    if NO_RESULT_KEY in document and isinstance(groups, list):
        stated = [group.get("counts") for group in groups if isinstance(group, dict)]
        found = sum(
            group_counts[NO_RESULT_KEY]
            for group_counts in stated
            if isinstance(group_counts, dict) and type(group_counts.get(NO_RESULT_KEY)) is int
        )
        if found != no_result:
            problems.append(f"$.{NO_RESULT_KEY}: the trial groups give {found}")
    summary = document.get("population_summary")
    if isinstance(summary, dict):  # the population summary counts results only
        for key, counted in (
            ("total_runs", "total_runs"),
            ("safe_count", "passed"),
            ("unsafe_count", "failed"),
            ("undetermined_count", "undetermined"),
            ("error_count", "errors"),
        ):
            if key in summary and summary[key] != population[counted]:
                problems.append(
                    f"$.population_summary.{key}: the results give {population[counted]}"
                )
    return problems


def report_shape_problems(document: object) -> list[str]:
    """Top-level problems of a parsed report: not an object, missing or mistyped keys."""
    if not isinstance(document, dict):
        return ["$: expected a JSON object (a rampart JSON report)"]
    problems = [f"$.{key}: required field is missing" for key in REPORT_KEYS if key not in document]
    for key in (*_COUNT_KEYS, NO_RESULT_KEY):
        value = document.get(key, 0)
        if type(value) is not int or value < 0:
            problems.append(f"$.{key}: expected an integer >= 0")
    duration = document.get("duration_seconds", 0.0)
    if type(duration) not in (int, float) or duration < 0:
        problems.append("$.duration_seconds: expected a number >= 0")
    for key in ("metadata", "population_summary", "by_harm_category"):
        if key in document and not isinstance(document[key], dict):
            problems.append(f"$.{key}: expected an object")
    if "trial_groups" in document and not isinstance(document["trial_groups"], list):
        problems.append("$.trial_groups: expected an array")
    if "run" in document and not isinstance(document["run"], dict):
        problems.append("$.run: expected an object")
    return problems
