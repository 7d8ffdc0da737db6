"""``rampart validate PATH...``: check reports and trace files, one line per bad record.

Each record goes through the checks a reader applies, in order, and is reported under
the first one it breaks:

1. ``json`` -- strict JSON text (``rampart.codec.parse_strict_json``: finite numbers,
   no repeated member, Unicode scalar strings);
2. ``version`` -- ``rampart.trace.v2`` and nothing else (fail closed);
3. ``schema`` -- the committed JSON Schema (``schemas/trace.v2.schema.json``, which
   ``ResultRecord.json_schema()`` builds; the schema check keeps the two equal),
   checked by jsonschema;
4. ``decoder`` -- the codec's decoder rules (``rampart.codec.deserialize_record``):
   exact types, closed enums, cross-field rules.

A JSON report is checked as a whole document (strict JSON, its top-level keys, counts
that agree with its results) and each result entry as the record it was projected
from (``rampart.reporting._report_format``, where the format is written and read). A
line names the file, the line and the rule; it never shows the record's content
(paths name free-form keys by position).
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rampart.cli import _inputs
from rampart.cli._errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, CliError

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]
    from jsonschema.protocols import Validator  # type: ignore[import-untyped]

__all__ = [
    "Problem",
    "check_file",
    "record_problem",
    "register",
    "run",
    "schema_problem",
    "section_problems",
    "section_rule",
]

_DESCRIPTION = """\
Check JSON reports (JsonFileReportSink) and JSONL trace files (JsonlTraceSink) against
the rampart.trace.v2 JSON Schema and the codec's decoder rules. Prints one line per bad
record, PATH:LINE: RULE [CHECK], where CHECK is the first check the record fails
(json, version, schema, decoder, report); record content is never shown.
"""

_EPILOG = """\
A directory stands for its latest run (its newest report and trace); --all checks
every report, trace and journal in it.

exit status: 0 every file is valid; 1 a bad record or a file that is neither a report
nor a trace; 2 a file could not be read, or there was nothing to check (no record).
"""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "validate",
        help="check JSON reports and JSONL traces against the schema and decoder rules",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="JSON report or JSONL trace files to check, or report directories (their "
        "latest run's report and trace)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="check every report, trace and journal under each directory, not only "
        "its latest run's",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="print the bad records only, no summary line"
    )
    parser.set_defaults(run=run)


class Problem:
    """One bad record (or file): where, which rule, which check found it."""

    __slots__ = ("check", "line", "rule")

    def __init__(self, line: int | None, rule: str, check: str) -> None:
        self.line = line
        self.rule = rule
        self.check = check

    def render(self, path: Path) -> str:
        where = f"{path}:{self.line}" if self.line is not None else f"{path}"
        return f"{where}: {self.rule} [{self.check}]"


# --------------------------------------------------------------------------- the schema


@functools.cache
def _validator() -> Validator:
    from jsonschema.validators import validator_for  # type: ignore[import-untyped]

    from rampart.codec import ResultRecord

    schema = ResultRecord.json_schema()
    cls = validator_for(schema)
    cls.check_schema(schema)
    validator: Validator = cls(schema)
    return validator


@functools.cache
def _schema_names() -> frozenset[str]:
    """Every member name the schema defines (shown in paths; other keys by position)."""
    from rampart.codec import ResultRecord

    names: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict):
                names.update(properties)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(ResultRecord.json_schema())
    return frozenset(names)


def _path(error: ValidationError, document: object) -> str:
    parts = ["$"]
    node: Any = document
    for segment in error.absolute_path:
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
        elif segment in _schema_names():
            parts.append(f".{segment}")
        else:
            position = list(node).index(segment) if isinstance(node, dict) else 0
            parts.append(f"[<key #{position}>]")
        try:
            node = node[segment]
        except (KeyError, IndexError, TypeError):
            node = None
    return "".join(parts)


_JSON_TYPES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def _rule(error: ValidationError) -> str:
    """What the schema expected, in words built from the schema only (never the data)."""
    keyword, expected, instance = error.validator, error.validator_value, error.instance
    got = _JSON_TYPES.get(type(instance), "value")
    if keyword == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        return f"expected {' or '.join(map(str, kinds))}, got {got}"
    if keyword == "enum":
        return "expected one of " + ", ".join(json.dumps(value) for value in expected)
    if keyword == "const":
        return f"expected {json.dumps(expected)}"
    if keyword == "required":
        missing = [name for name in expected if isinstance(instance, dict) and name not in instance]
        return f"required field {missing[0]!r} is missing" if missing else "required field missing"
    if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        sign = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
        return f"expected a number {sign[str(keyword)]} {expected}"
    if keyword == "minItems":
        return f"expected at least {expected} item{'s' * (expected != 1)}"
    if keyword == "minLength":
        return f"expected at least {expected} character{'s' * (expected != 1)}"
    if keyword in ("anyOf", "oneOf"):
        kinds = [branch.get("type") for branch in expected if isinstance(branch, dict)]
        if kinds and all(
            isinstance(kind, str) and len(branch) == 1
            for kind, branch in zip(kinds, expected, strict=False)
        ):
            return f"expected {' or '.join(kinds)}, got {got}"
        return "matches none of the shapes the schema allows here"
    if keyword == "additionalProperties":
        return "has a member the schema does not allow"
    return f"breaks the schema's {keyword!r} rule"


def schema_problem(document: object) -> str | None:
    """The first JSON Schema rule ``document`` breaks, as ``$.path: rule``, or ``None``."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(document))
    if error is None:
        return None
    path = _path(error, document)
    rule = _rule(error)
    if error.validator == "required" and rule.startswith("required field '"):
        name = rule.split("'")[1]
        return f"{path}.{name}: required field is missing"
    return f"{path}: {rule}"


# --------------------------------------------------------------------------- records


def record_problem(text: str) -> Problem | None:
    """The first check a record's JSON ``text`` fails, or ``None`` if it is valid."""
    from rampart.codec import TRACE_SCHEMA_VERSION, deserialize_record, parse_strict_json
    from rampart.core.errors import SchemaError, UnsupportedSchemaVersionError

    try:
        document = parse_strict_json(data=text)
    except SchemaError as error:
        try:  # the decoder's reader names the record's own fields in the path
            deserialize_record(data=text)
        except SchemaError as located:
            return Problem(None, str(located), "json")
        return Problem(None, str(error), "json")  # pragma: no cover - both readers agree
    if not isinstance(document, dict):
        return Problem(None, "$: expected a JSON object (a rampart.trace.v2 record)", "json")
    version = document.get("version")
    if isinstance(version, str) and version != TRACE_SCHEMA_VERSION:
        try:
            deserialize_record(data=text)
        except UnsupportedSchemaVersionError as error:
            return Problem(None, str(error), "version")
    found = schema_problem(document)
    if found is not None:
        return Problem(None, found, "schema")
    try:
        deserialize_record(data=text)
    except SchemaError as error:
        return Problem(None, str(error), "decoder")
    return None


def _check_trace(text: str) -> tuple[int, list[Problem]]:
    problems = []
    count = 0
    for number, line in _inputs.iter_trace_lines(text):
        count += 1
        problem = record_problem(line)
        if problem is not None:
            problem.line = number
            problems.append(problem)
    return count, problems


def _check_report(text: str) -> tuple[int, list[Problem]]:
    from rampart.codec import parse_strict_json
    from rampart.core.errors import SchemaError
    from rampart.reporting._internal import (
        entry_document,
        entry_record,
        iter_report_entries,
        report_count_problems,
        report_message,
        report_shape_problems,
    )

    try:
        document = parse_strict_json(data=text)
    except SchemaError as error:
        return 0, [Problem(1, str(error), "json")]
    shape = report_shape_problems(document)
    if shape:
        return 0, [Problem(1, rule, "report") for rule in shape]
    try:
        entries = list(iter_report_entries(document))
    except ValueError as error:
        return 0, [Problem(1, str(error), "report")]
    problems: list[Problem] = []
    located: list[tuple[str, Problem]] = []
    records = []
    for _category, location, entry in entries:
        if isinstance(entry, dict):
            found = schema_problem(entry_document(entry))
            if found is not None:
                message = report_message(found, location)
                located.append((location, Problem(None, message, "schema")))
                continue
        try:
            records.append(entry_record(entry, location))
        except SchemaError as error:
            located.append((location, Problem(None, str(error), "decoder")))
    if located:
        lines = _inputs.entry_lines(text)
        for location, problem in located:
            problem.line = lines.get(location)
            problems.append(problem)
    else:
        problems.extend(
            Problem(1, rule, "report") for rule in report_count_problems(document, records)
        )
    sections = section_problems(document)
    problems.extend(Problem(1, rule, "report") for rule in sections)
    if not located and not sections:
        problems.extend(Problem(1, rule, "report") for rule in group_problems(document, records))
    return len(entries), problems


_GOT = re.compile(r",? got .*?(?= @ |$)")
_WHERE = re.compile(r" @ \$(\S*)$")
_FIELD = re.compile(r": \w+: (\w+) (must be .*?)(?: @ |$)")


def section_rule(message: str, base: str) -> str:
    """A ``from_json`` error of a report section, located under ``base``, without the
    value it was given (the ``rampart._checks`` format puts it after ``got``)."""
    text = _GOT.sub("", message)
    where = _WHERE.search(text)
    sub = where.group(1) if where else ""
    field = _FIELD.search(text)
    if field is None:
        return f"{base}{sub}: not what the report format allows (a wrong type or value)"
    return f"{base}{sub}.{field.group(1)}: {field.group(2)}"


def section_problems(document: dict[str, Any]) -> list[str]:
    """Problems of the report's ``trial_groups`` and ``run`` sections (when present)."""
    from rampart.reporting import RunInfo, TrialGroupSummary

    problems = []
    for index, entry in enumerate(document.get("trial_groups") or []):
        try:
            TrialGroupSummary.from_json(entry)
        except (TypeError, ValueError) as error:
            problems.append(section_rule(str(error), f"$.trial_groups[{index}]"))
    if isinstance(document.get("run"), dict):
        try:
            RunInfo.from_json(document["run"])
        except (TypeError, ValueError) as error:
            problems.append(section_rule(str(error), "$.run"))
    return problems


def group_problems(document: dict[str, Any], records: list[Any]) -> list[str]:
    """The report's ``trial_groups`` that its own clone results contradict: each group
    is judged again from them (``rampart.cli._view``) and must be what it states."""
    from rampart.cli._view import contradiction, cut_short, derived_groups
    from rampart.reporting import TrialGroupSummary

    entries = document.get("trial_groups") or []
    derived = derived_groups(records, cut_short(entries))
    problems = []
    for index, entry in enumerate(entries):
        stated = TrialGroupSummary.from_json(entry)
        found = contradiction(stated, derived.get(stated.nodeid))
        if found is not None:
            problems.append(f"$.trial_groups[{index}]: {found}")
    return problems


def check_file(path: Path, text: str) -> tuple[str, int, list[Problem]]:
    """``(kind, records checked, problems)`` for one file's text."""
    try:
        kind = _inputs.sniff(path, text)
    except CliError as error:
        rule = str(error).removeprefix(f"{path}: ")
        return "unknown", 0, [Problem(None, rule, "format")]
    if kind == "trace":
        count, problems = _check_trace(text)
    else:
        count, problems = _check_report(text)
    return kind, count, problems


def _files(names: list[str], *, every: bool) -> list[Path | CliError]:
    """What to check, in the order given: each file named, each directory's latest
    run's files (or all of them), or the error saying why a directory has none."""
    from rampart.cli import _select

    files: list[Path | CliError] = []
    for name in names:
        path = Path(name)
        if not path.is_dir():
            files.append(path)
            continue
        try:
            files.extend(_select.all_files(path) if every else _select.latest_files(path))
        except CliError as error:
            files.append(error)
    return files


def run(args: argparse.Namespace) -> int:
    unreadable = bad_files = records = bad_records = checked = 0
    for name in _files(args.paths, every=args.all):
        try:
            if isinstance(name, CliError):
                raise name
            path, data = _inputs.read_bytes(name)
        except CliError as error:
            print(f"rampart validate: error: {error}", file=sys.stderr, flush=True)
            unreadable += 1
            continue
        checked += 1
        try:
            text = _inputs.decode_text(path, data)
        except CliError as error:
            count, problems = 0, [Problem(None, str(error).removeprefix(f"{path}: "), "format")]
        else:
            _kind, count, problems = check_file(path, text)
        records += count
        bad_records += len(problems)
        bad_files += bool(problems)
        for problem in problems:
            print(problem.render(path))
    # Nothing checked is not "valid": an empty trace or directory proves nothing.
    nothing = not records and not bad_records
    if not args.quiet:
        if bad_records:
            verdict = f"{bad_records} bad"
        elif nothing:
            verdict = "nothing checked (no record in them)"
        else:
            verdict = "all valid"
        print(
            f"checked {checked} file{'s' * (checked != 1)}, {records} "
            f"record{'s' * (records != 1)}: {verdict}"
            + (f"; {unreadable} not readable" if unreadable else "")
        )
    if unreadable:
        return EXIT_USAGE
    if bad_files:
        return EXIT_FINDINGS
    return EXIT_USAGE if nothing else EXIT_OK
