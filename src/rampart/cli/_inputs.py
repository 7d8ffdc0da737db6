"""Reading saved runs: JSON reports and JSONL trace files, into canonical records.

A **JSONL trace** (``JsonlTraceSink``) holds one ``rampart.trace.v2`` record per
``"\\n"``-separated line; each line is read by the codec (``deserialize_record``), so
every decoder rule applies. A **JSON report** (``JsonFileReportSink``) is a flat
projection of the same records; each of its result entries is mapped back to a record
body (:func:`entry_body`) and read by the same decoder. The report leaves out
attachments, injections and timestamps, so a record rebuilt from it holds none of
them (an attachment-only request gets one placeholder attachment, since a request
needs a prompt or an attachment); the trace has everything.

Which kind a file is, is decided from its content, not its name (:func:`sniff`).
Every failure names the file, the line and the rule, never the file's content. All
JSON here is read under the codec's one reading policy (``rampart.codec``:
size, nesting depth, duplicate keys, finite numbers; :func:`_strict`), and trace lines
are split by the codec's JSONL reader, so a hostile file is an error naming it.
"""

from __future__ import annotations

import json
import json.scanner
import re
import stat
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import attrs

from rampart.cli._errors import CliError
from rampart.codec import ResultRecord
from rampart.core.result import HarmCategory, SafetyStatus

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "Kind",
    "SavedRun",
    "category_label",
    "decode_text",
    "entry_body",
    "entry_lines",
    "entry_record",
    "iter_report_entries",
    "iter_trace_lines",
    "load_run",
    "load_runs",
    "read_bytes",
    "read_text",
    "report_count_problems",
    "report_message",
    "report_shape_problems",
    "runs_in",
    "sniff",
]

Kind = Literal["report", "trace"]

REPORT_KEYS = (
    "total_runs",
    "passed",
    "failed",
    "undetermined",
    "errors",
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


@attrs.frozen(kw_only=True)
class SavedRun:
    """One saved run as the commands see it: canonical records plus what the file adds.

    ``metadata``, ``trial_groups`` and ``run`` come from a JSON report (a trace file has
    none of them: empty, empty, ``None``); ``duration_seconds`` too.
    """

    path: Path
    kind: Kind
    records: list[ResultRecord]
    metadata: dict[str, Any] = attrs.field(factory=dict)
    trial_groups: list[dict[str, Any]] = attrs.field(factory=list)
    run: dict[str, Any] | None = None
    duration_seconds: float | None = None


# --------------------------------------------------------------------------- files


def read_bytes(name: str | Path) -> tuple[Path, bytes]:
    """The content of the file ``name``, or a :class:`CliError` saying why it cannot be read.

    Only a regular file is read: a FIFO would block forever and ``/dev/zero`` would
    never end, so anything else is refused before it is opened.
    """
    path = Path(name)
    try:
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            raise CliError(f"{path}: not a regular file; expected a JSON report or a JSONL trace")
        return path, path.read_bytes()
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"{path}: is a directory, not a report or trace file") from None
    except PermissionError:
        raise CliError(f"{path}: permission denied") from None
    except OSError as error:
        raise CliError(
            f"{path}: cannot be read ({error.strerror or type(error).__name__})"
        ) from None


def decode_text(path: Path, data: bytes) -> str:
    """``data`` as UTF-8 text, or a :class:`CliError`: a report or trace is UTF-8 JSON."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CliError(
            f"{path}: not UTF-8 text (byte {error.start}); expected a JSON report or a "
            "JSONL trace file"
        ) from None


def read_text(name: str | Path) -> tuple[Path, str]:
    """The UTF-8 text of the file ``name``, or a :class:`CliError` saying why not."""
    path, data = read_bytes(name)
    return path, decode_text(path, data)


def _strict(text: str) -> Any:
    """``text``'s JSON value under the codec's reading policy; ``SchemaError`` if none."""
    from rampart.codec import parse_strict_json

    return parse_strict_json(data=text)


def _first_value(text: str) -> object:
    """The JSON value of the first non-blank line, or ``None`` if it is not JSON."""
    for line in text.split("\n"):
        if line.strip():
            try:
                return _strict(line)
            except ValueError:
                return None
    return None


def sniff(path: Path, text: str) -> Kind:
    """Whether ``text`` is a JSONL trace or a JSON report, from its content.

    A file whose first line is a JSON object with a ``version`` is a trace (so is an
    empty ``.jsonl`` file: a run without results); a JSON object with the report's
    keys is a report. Anything else is a :class:`CliError`.
    """
    if not text.strip():
        if path.suffix == ".jsonl":
            return "trace"
        raise CliError(f"{path}: empty file; expected a JSON report or a JSONL trace file")
    first = _first_value(text)
    if isinstance(first, dict) and "version" in first:
        return "trace"
    try:
        whole = _strict(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        if "by_harm_category" in whole or "total_runs" in whole:
            return "report"
        if "version" in whole:
            return "trace"  # one record written over several lines
    if path.suffix == ".jsonl":
        return "trace"  # its lines will say what is wrong
    if path.suffix == ".json" and whole is None:
        return "report"  # the JSON parser will say what is wrong
    raise CliError(
        f"{path}: neither a rampart JSON report (an object with 'by_harm_category') nor "
        "a JSONL trace file (one object with a 'version' per line)"
    )


# --------------------------------------------------------------------------- traces


def iter_trace_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of every non-blank line, split on ``"\\n"`` only.

    Unicode line separators (U+2028, U+0085, ...) may appear raw inside a record's
    strings when another producer wrote the file; only ``"\\n"`` ends a record (the
    codec's JSONL reader, ``rampart.codec._jsonl.split_jsonl``). A record written over
    several lines (pretty-printed) is read as one record.
    """
    from rampart.codec._jsonl import split_jsonl

    lines = text.split("\n")
    if _is_one_document(text, lines):
        start = next(number for number, line in enumerate(lines, start=1) if line.strip())
        yield start, text
        return
    for line in split_jsonl(text):
        yield line.number, line.text()


def _is_one_document(text: str, lines: list[str]) -> bool:
    stripped = [line for line in lines if line.strip()]
    if len(stripped) < 2 or stripped[0].strip() != "{":
        return False
    try:
        return isinstance(_strict(text), dict)
    except ValueError:
        return False


def _load_trace(path: Path, text: str) -> SavedRun:
    from rampart.codec import deserialize_record
    from rampart.core.errors import SchemaError, UnsupportedSchemaVersionError

    records = []
    for number, line in iter_trace_lines(text):
        try:
            records.append(deserialize_record(data=line))
        except UnsupportedSchemaVersionError as error:
            raise CliError(f"{path}:{number}: {error}") from None
        except SchemaError as error:
            raise CliError(
                f"{path}:{number}: not a valid rampart.trace.v2 record: {error} "
                "('rampart validate' lists every bad record)"
            ) from None
    return SavedRun(path=path, kind="trace", records=records, metadata=_run_marks(records))


# What the pytest plugin stamps on every result of an interrupted or incomplete run.
_RUN_KEY = "_rampart_run"


def _run_marks(records: list[ResultRecord]) -> dict[str, Any]:
    """The interrupted/incomplete marks a trace's records carry, as report metadata
    (``{}`` for a clean run): a trace alone says that its run did not finish."""
    interrupted = incomplete = False
    reasons: list[str] = []
    seen: set[str] = set()
    for record in records:
        marks = record.result.metadata.get(_RUN_KEY)
        if not isinstance(marks, dict):
            continue
        interrupted = interrupted or marks.get("interrupted") is True
        incomplete = incomplete or marks.get("incomplete") is True
        for reason in marks.get("incomplete_reasons") or []:
            if isinstance(reason, str) and reason not in seen:
                seen.add(reason)
                reasons.append(reason)
    metadata: dict[str, Any] = {}
    if incomplete or reasons:
        metadata.update(incomplete=True, incomplete_reasons=reasons)
    if interrupted:
        metadata["interrupted"] = True
    return metadata


# --------------------------------------------------------------------------- reports


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


def _eval_body(evaluation: dict[str, Any]) -> dict[str, Any]:
    body = dict(evaluation)
    if body.get("confidence", 1.0) is None:
        body["confidence"] = 0.0  # the report's null is the record's 0.0 (docs/reporting.md)
    return body


def _turn_body(turn: object) -> object:
    if not isinstance(turn, dict):
        return turn  # the decoder says "expected an object"
    prompt = turn.get("prompt")
    request: dict[str, Any] = {"prompt": prompt, "attachments": []}
    if prompt is None:
        request["attachments"] = [dict(OMITTED_ATTACHMENT)]
    response: dict[str, Any] = {
        "text": turn.get("response_text"),
        "tool_calls": turn.get("tool_calls", []),
        "side_effects": turn.get("side_effects", []),
        "metadata": turn.get("response_metadata", {}),
    }
    if "response_text" not in turn:
        del response["text"]
    body: dict[str, Any] = {
        "request": request,
        "response": response,
        "turn_number": turn.get("turn_number", 0),
    }
    if "eval_outcome" in turn:
        confidence = turn.get("eval_confidence", 1.0)
        evaluation: dict[str, Any] = {
            "outcome": turn["eval_outcome"],
            "confidence": 0.0 if confidence is None else confidence,
            "rationale": turn.get("eval_rationale", ""),
        }
        if "eval_undetermined_operands" in turn:
            evaluation["undetermined_operands"] = turn["eval_undetermined_operands"]
        body["eval_result"] = evaluation
    if "driver_reasoning" in turn:
        body["driver_reasoning"] = turn["driver_reasoning"]
    return body


_BODY_KEYS = (
    "status",
    "summary",
    "observability_level",
    "duration_seconds",
    "harm_category",
    "strategy",
    "metadata",
    "trace_end_reason",
    "population",
)


def entry_body(entry: object) -> object:
    """The canonical result body a JSON report entry was projected from (see the module).

    Missing keys stay missing and wrong types stay wrong, for the decoder to name.
    """
    if not isinstance(entry, dict):
        return entry
    body: dict[str, Any] = {key: entry[key] for key in _BODY_KEYS if key in entry}
    turns = entry.get("turns", [])
    body["turns"] = [_turn_body(turn) for turn in turns] if isinstance(turns, list) else turns
    final = entry.get("final_trace_evaluation")
    if isinstance(final, dict):
        body["final_trace_evaluation"] = _eval_body(final)
    elif final is not None:
        body["final_trace_evaluation"] = final
    return body


# Record paths of turn fields, as the report names them.
_REPORT_NAMES = (
    (re.compile(r"\.request\.prompt\b"), ".prompt"),
    (re.compile(r"\.response\.text\b"), ".response_text"),
    (re.compile(r"\.response\.metadata\b"), ".response_metadata"),
    (re.compile(r"\.response\.(tool_calls|side_effects)\b"), r".\1"),
    (re.compile(r"\.eval_result\.outcome\b"), ".eval_outcome"),
    (re.compile(r"\.eval_result\.confidence\b"), ".eval_confidence"),
    (re.compile(r"\.eval_result\.rationale\b"), ".eval_rationale"),
    (re.compile(r"\.eval_result\.undetermined_operands\b"), ".eval_undetermined_operands"),
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
        raise SchemaError(f"{location}.safe: disagrees with status")
    document = {"version": "rampart.trace.v2", "result": entry_body(entry)}
    try:
        record = deserialize_record(data=json.dumps(document, ensure_ascii=False))
    except SchemaError as error:
        raise SchemaError(report_message(str(error), location)) from None
    nodeid, index = record_attribution(record.result)
    if nodeid is None and index is None:
        return record
    return type(record)(result=record.result, pytest_nodeid=nodeid, result_index=index)


def _count(records: list[ResultRecord], status: SafetyStatus | None) -> int:
    return sum(1 for record in records if status is None or record.result.status is status)


def _no_result(document: dict[str, Any]) -> int:
    """The clones the report says ran without a result (0 for a report from before the
    key, or one whose value ``report_shape_problems`` rejects)."""
    value = document.get("no_result", 0)
    return value if type(value) is int and value >= 0 else 0


def report_count_problems(document: dict[str, Any], records: list[ResultRecord]) -> list[str]:
    """The report's own numbers that its results (and its trial groups' no-result
    clones) contradict (a report never misstates)."""
    problems = []
    listed = _count(records, None)
    no_result = _no_result(document)
    counts = {
        "total_runs": listed + no_result,
        "passed": _count(records, SafetyStatus.SAFE),
        "failed": _count(records, SafetyStatus.UNSAFE),
        "undetermined": _count(records, SafetyStatus.UNDETERMINED),
        "errors": _count(records, SafetyStatus.ERROR),
    }
    for key, expected in counts.items():
        if key in document and document[key] != expected:
            problems.append(f"$.{key}: the results give {expected}")
    groups = document.get("trial_groups")
    if "no_result" in document and isinstance(groups, list):
        stated = [group.get("counts") for group in groups if isinstance(group, dict)]
        found = sum(
            group_counts["no_result"]
            for group_counts in stated
            if isinstance(group_counts, dict) and type(group_counts.get("no_result")) is int
        )
        if found != no_result:
            problems.append(f"$.no_result: the trial groups give {found}")
    population = {**counts, "total_runs": listed}  # the population summary counts results
    summary = document.get("population_summary")
    if isinstance(summary, dict):
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
    for key in ("total_runs", "passed", "failed", "undetermined", "errors", "no_result"):
        value = document.get(key, 0)
        if type(value) is not int or value < 0:
            problems.append(f"$.{key}: expected an integer >= 0")
    duration = document.get("duration_seconds", 0.0)
    if type(duration) not in (int, float) or duration < 0:
        problems.append("$.duration_seconds: expected a number >= 0")
    for key in ("metadata", "population_summary", "by_harm_category"):
        if key in document and not isinstance(document[key], dict):
            problems.append(f"$.{key}: expected an object")
    for key in ("trial_groups",):
        if key in document and not isinstance(document[key], list):
            problems.append(f"$.{key}: expected an array")
    if "run" in document and not isinstance(document["run"], dict):
        problems.append("$.run: expected an object")
    return problems


def entry_lines(text: str) -> dict[str, int]:
    """``location -> line number`` of every result entry of the report ``text``.

    Parses ``text`` again with a scanner that notes where each object starts. Used only
    to locate problems, so its cost is paid when there is one; ``{}`` if the text is not
    a report.
    """
    from rampart.codec._json import check_limits

    try:
        check_limits(text)  # the pure-Python scanner below recurses per level
    except ValueError:
        return {}
    starts: dict[int, int] = {}
    decoder: Any = json.JSONDecoder()
    parse_object = decoder.parse_object

    def noting(state: tuple[str, int], *rest: Any) -> tuple[Any, int]:
        value, end = parse_object(state, *rest)
        starts[id(value)] = state[1] - 1
        return value, end

    decoder.parse_object = noting
    decoder.scan_once = typing.cast("Any", json.scanner).py_make_scanner(decoder)
    try:
        document = decoder.decode(text)
        entries = list(iter_report_entries(document))
    except (ValueError, AttributeError, RecursionError):
        return {}
    return {
        location: text.count("\n", 0, starts[id(entry)]) + 1
        for _category, location, entry in entries
        if id(entry) in starts
    }


def _load_report(path: Path, text: str) -> SavedRun:
    from rampart.codec import parse_strict_json
    from rampart.core.errors import SchemaError

    try:
        document = parse_strict_json(data=text)
    except SchemaError as error:
        raise CliError(f"{path}: not a valid JSON report: {error}") from None
    problems = report_shape_problems(document)
    if problems:
        raise CliError(f"{path}: not a valid JSON report: {problems[0]}")
    records = []
    try:
        for _category, location, entry in iter_report_entries(document):
            records.append(entry_record(entry, location))
    except (SchemaError, ValueError) as error:
        raise CliError(
            f"{path}: not a valid JSON report: {error} ('rampart validate' lists every problem)"
        ) from None
    groups = document.get("trial_groups", [])
    return SavedRun(
        path=path,
        kind="report",
        records=records,
        metadata=document["metadata"],
        trial_groups=[group for group in groups if isinstance(group, dict)],
        run=document.get("run"),
        duration_seconds=float(document["duration_seconds"]),
    )


# --------------------------------------------------------------------------- runs


def load_run(name: str | Path) -> SavedRun:
    """Read a JSON report or a JSONL trace file; a :class:`CliError` at the first problem."""
    path, text = read_text(name)
    if sniff(path, text) == "trace":
        return _load_trace(path, text)
    return _load_report(path, text)


# What a report directory holds, in the order one run's files are preferred: the JSON
# report states the trial groups and the run; the trace has every record; the journal
# (``journal/``) is what is left when a run never got to write either.
_RUN_FILES = (("run_report_*.json",), ("traces_*.jsonl",), ("rampart-journal-*.jsonl",))


def runs_in(directory: Path) -> list[Path]:
    """The saved runs under ``directory`` (a report directory, or one holding several,
    such as the artifacts of CI shards), one file per run, in path order.

    Each directory contributes its JSON reports, else its traces, else its journals
    (``journal/`` is read only when the directory above it holds neither: a run's
    journal repeats its report). A :class:`CliError` when there is none.
    """
    found: list[Path] = []

    def visit(place: Path) -> None:
        try:
            children = sorted(place.iterdir())
        except OSError as error:
            raise CliError(
                f"{place}: cannot be read ({error.strerror or type(error).__name__})"
            ) from None
        files = [child for child in children if child.is_file()]
        picked: list[Path] = []
        for patterns in _RUN_FILES:
            picked = [f for f in files if any(f.match(pattern) for pattern in patterns)]
            if picked:
                break
        found.extend(picked)
        for child in children:
            if child.is_dir() and not child.is_symlink():
                if picked and child.name == "journal":
                    continue
                visit(child)

    visit(directory)
    if not found:
        raise CliError(
            f"{directory}: no saved run in it (run_report_*.json, traces_*.jsonl or "
            "journal/rampart-journal-*.jsonl)"
        )
    return found


def load_runs(names: list[str]) -> list[SavedRun]:
    """:func:`load_run` for each name, in order; a directory stands for the runs in it
    (:func:`runs_in`)."""
    paths: list[str | Path] = []
    for name in names:
        path = Path(name)
        paths.extend(runs_in(path) if path.is_dir() else [name])
    return [load_run(path) for path in paths]
