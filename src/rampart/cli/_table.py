"""Plain-text tables and files the commands write (CSV, JSON, JSONL), all atomic.

Every cell shown on a terminal passes ``one_line`` (no escape sequences, no line
breaks, no bidirectional overrides) and the redaction policy, so a node id or summary
written by an agent cannot disturb the table or reveal a secret.
"""

from __future__ import annotations

import csv
import io
import json
from typing import TYPE_CHECKING, Any

from rampart._redact import redact
from rampart._text import one_line
from rampart.cli._errors import CliError

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

__all__ = [
    "cell",
    "csv_text",
    "dump_json",
    "format_table",
    "output_target",
    "write_new",
    "write_text",
]


def cell(value: object) -> str:
    """``value`` as one safe table cell (``-`` for ``None``)."""
    if value is None:
        return "-"
    return redact(one_line(value if isinstance(value, str) else str(value)))


def format_table(
    header: Sequence[str], rows: Sequence[Sequence[object]], *, right: Sequence[int] = ()
) -> list[str]:
    """Lines of an aligned table: the header, a rule, one line per row.

    Columns whose index is in ``right`` are right-aligned (numbers).
    """
    cells = [[cell(value) for value in row] for row in rows]
    widths = [len(name) for name in header]
    for row in cells:
        for index, text in enumerate(row):
            widths[index] = max(widths[index], len(text))

    def line(values: Sequence[str]) -> str:
        parts = [
            value.rjust(widths[index]) if index in right else value.ljust(widths[index])
            for index, value in enumerate(values)
        ]
        return "  ".join(parts).rstrip()

    return [line(list(header)), line(["-" * width for width in widths])] + [
        line(row) for row in cells
    ]


def csv_text(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """The rows as CSV text (``None`` as an empty cell)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if value is None else value for value in row])
    return buffer.getvalue()


def output_target(path: Path) -> Path:
    """Where a file the user named is written (``rampart.reporting._files.output_file``:
    a new or regular file, or the file a symbolic link names), or a :class:`CliError`."""
    from rampart.reporting._internal import output_file

    try:
        return output_file(path)
    except ValueError as error:
        raise CliError(str(error)) from None


def write_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (a temporary file renamed over it).

    For files the user names explicitly (``--json OUT``, ``--html OUT``): a regular file
    is replaced, as a shell redirection would, and a symbolic link writes the file it
    names; anything else is refused (:func:`output_target`). Returns ``path``.
    """
    from rampart.reporting._internal import replace_file

    output_target(path)
    replace_file(path, text.encode("utf-8"))
    return path


def write_new(directory: Path, *, stem: str, suffix: str, data: bytes) -> Path:
    """A new file ``<directory>/<stem><suffix>`` that never replaces an existing one
    (the report sinks' rule: a UUID suffix on a taken name)."""
    from rampart.reporting._internal import write_new_file

    return write_new_file(directory, stem=stem, suffix=suffix, data=data, owner="rampart")


def dump_json(value: Any) -> str:
    """Indented JSON text with a final newline (no NaN); characters a terminal would
    obey without showing them (C1 controls, bidi overrides) are ``\\u`` escapes."""
    from rampart._text import escape_hidden_json

    return (
        escape_hidden_json(json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)) + "\n"
    )
