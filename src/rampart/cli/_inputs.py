"""Reading saved runs: JSON reports and JSONL trace files, into canonical records.

A **JSONL trace** (``JsonlTraceSink``) holds one ``rampart.trace.v2`` record per
``"\\n"``-separated line; each line is read by the codec (``deserialize_record``), so
every decoder rule applies. A **JSON report** (``JsonFileReportSink``) is a flat
projection of the same records; the format is written and read in one module,
``rampart.reporting._report_format``, which maps each result entry back to its record
(``entry_record``) for the same decoder. This module finds, reads and sniffs the
files, and says what is wrong with one in the CLI's words.

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
from rampart.reporting._internal import STAMP_PATTERN

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "Kind",
    "SavedRun",
    "decode_text",
    "entry_lines",
    "file_stamp",
    "iter_trace_lines",
    "load_run",
    "read_bytes",
    "read_text",
    "sniff",
    "stamp_time",
]

Kind = Literal["report", "trace"]

# The UTC time stamp in the names of the files a run writes (``run_report_<stamp>.json``,
# ``traces_<stamp>.jsonl``: ``rampart.reporting._files.utc_timestamp``) and of its
# journal (``rampart-journal-<stamp>-<run id>.jsonl``, named when the run starts).
_STAMP = rf"(?P<stamp>{STAMP_PATTERN})"
_STAMPED = re.compile(rf"(?:run_report|traces)_{_STAMP}(?:_[0-9a-f]+)?\.(?:json|jsonl|html)")
_JOURNAL_NAME = re.compile(rf"rampart-journal-{_STAMP}-(?P<run>[0-9a-f]+)\.jsonl")


def stamp_time(stamp: str) -> str:
    """A file name's ``YYYY-mm-ddTHH-MM-SS-mmm`` as ISO 8601 UTC."""
    day, clock = stamp.split("T")
    hours, minutes, seconds, millis = clock.split("-")
    return f"{day}T{hours}:{minutes}:{seconds}.{millis}+00:00"


def file_stamp(path: Path) -> str | None:
    """The time stamp in the name of a file rampart wrote (see above), or ``None``."""
    match = _STAMPED.fullmatch(path.name) or _JOURNAL_NAME.fullmatch(path.name)
    return None if match is None else match["stamp"]


@attrs.frozen(kw_only=True)
class SavedRun:
    """One saved run as the commands see it: canonical records plus what the file adds.

    ``metadata``, ``trial_groups`` and ``run`` come from a JSON report (a trace file has
    none of them: empty, empty, ``None``); ``duration_seconds`` too. ``run_id`` is the
    pytest plugin's run id (a report's ``metadata.run_id``, a journal's name; ``None``
    for a trace). ``started_at`` is when the run started, ISO 8601 UTC: a report's
    ``run.started_at``, a journal's name, a trace's earliest turn (``None`` when the
    file records no time).
    """

    path: Path
    kind: Kind
    records: list[ResultRecord]
    metadata: dict[str, Any] = attrs.field(factory=dict)
    trial_groups: list[dict[str, Any]] = attrs.field(factory=list)
    run: dict[str, Any] | None = None
    duration_seconds: float | None = None
    run_id: str | None = None
    started_at: str | None = None

    @property
    def resumed_runs(self) -> list[str]:
        """The ids of the runs this one resumed (it holds their results: one logical run)."""
        resumed = self.metadata.get("resumed")
        runs = resumed.get("runs") if isinstance(resumed, dict) else None
        return [str(key) for key in runs] if isinstance(runs, dict) else []


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
    from rampart.codec._internal import split_jsonl

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
    lines = list(iter_trace_lines(text))
    cut: str | None = None
    for position, (number, line) in enumerate(lines):
        try:
            records.append(deserialize_record(data=line))
        except UnsupportedSchemaVersionError as error:
            raise CliError(f"{path}:{number}: {error}") from None
        except SchemaError as error:
            if position == len(lines) - 1 and not text.endswith("\n") and len(lines) > 1:
                # A file cut short (a copy or a write that stopped): its complete records
                # are read, and the report says what was lost, as the journal reader does.
                cut = (
                    f"{path} was cut short: its last record (line {number}) is incomplete "
                    f"and was not read ({error}); 1 record lost, {len(records)} read"
                )
                break
            raise CliError(
                f"{path}:{number}: not a valid rampart.trace.v2 record: {error} "
                "('rampart validate' lists every bad record)"
            ) from None
    run_id = started = None
    journal = _JOURNAL_NAME.fullmatch(path.name)
    if journal is not None:
        started, run_id = stamp_time(journal["stamp"]), journal["run"]
    else:
        turns = [
            turn.timestamp
            for record in records
            for turn in record.result.turns
            if turn.timestamp is not None
        ]
        started = min(turns).isoformat(timespec="milliseconds") if turns else None
    metadata = _run_marks(records)
    if cut is not None:
        metadata["incomplete"] = True
        metadata["incomplete_reasons"] = [*metadata.get("incomplete_reasons", []), cut]
    return SavedRun(
        path=path,
        kind="trace",
        records=records,
        metadata=metadata,
        run_id=run_id,
        started_at=started,
    )


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


def entry_lines(text: str) -> dict[str, int]:
    """``location -> line number`` of every result entry of the report ``text``.

    Parses ``text`` again with a scanner that notes where each object starts. Used only
    to locate problems, so its cost is paid when there is one; ``{}`` if the text is not
    a report.
    """
    from rampart.codec._internal import check_limits
    from rampart.reporting._internal import iter_report_entries

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
    from rampart.reporting._internal import (
        report_count_problems,
        report_records,
        report_shape_problems,
    )

    try:
        document = parse_strict_json(data=text)
    except SchemaError as error:
        raise CliError(f"{path}: not a valid JSON report: {error}") from None
    problems = report_shape_problems(document)
    if problems:
        raise CliError(f"{path}: not a valid JSON report: {problems[0]}")
    try:
        records = report_records(document)
    except (SchemaError, ValueError) as error:
        raise CliError(
            f"{path}: not a valid JSON report: {error} ('rampart validate' lists every problem)"
        ) from None
    # Totals that its own results contradict: the file was edited (or damaged).
    counted = report_count_problems(document, records)
    if counted:
        raise CliError(
            f"{path}: not a valid JSON report: {counted[0]} (its totals were edited; "
            "'rampart validate' lists every problem)"
        )
    groups = document.get("trial_groups", [])
    run = document.get("run")
    run_id = document["metadata"].get("run_id")
    started = run.get("started_at") if isinstance(run, dict) else None
    return SavedRun(
        path=path,
        kind="report",
        records=records,
        metadata=document["metadata"],
        trial_groups=[group for group in groups if isinstance(group, dict)],
        run=run,
        duration_seconds=float(document["duration_seconds"]),
        run_id=run_id if isinstance(run_id, str) else None,
        started_at=started if isinstance(started, str) else None,
    )


# --------------------------------------------------------------------------- runs


def load_run(name: str | Path) -> SavedRun:
    """Read a JSON report or a JSONL trace file; a :class:`CliError` at the first problem."""
    path, text = read_text(name)
    if sniff(path, text) == "trace":
        return _load_trace(path, text)
    return _load_report(path, text)
