"""JSONL framing: the one writer and the one reader of rampart's line-per-record files.

The JSONL trace (``JsonlTraceSink``), the run journal, ``rampart rescore``'s output
and every reader of them (``rampart validate/report/diff/rescore``,
``read_trace_records``, ``--rampart-resume``) use these functions, so a file one of
them writes is a file every other reads the same way.

Writing (:func:`jsonl_line`): one JSON text per line, ended by ``"\\n"``. JSON leaves
U+0085, U+2028 and U+2029 raw inside strings, and ``str.splitlines()`` would split on
them, so they are written as ``\\u`` escapes: the document is unchanged and every line
reader sees one line.

Reading (:func:`split_jsonl`): lines end at ``"\\n"`` only (a raw U+2028 from another
producer stays inside its record), blank lines are skipped, and a last line without
its ``"\\n"`` is reported as not ``complete`` (a writer killed mid-line; the journal
skips it). :func:`stream_jsonl` splits a binary stream the same way, one line at a time,
with a bound on the line size (the run journal, which may be larger than memory). Each
line's text goes through the one JSON reading policy
(:func:`~rampart.codec._json.parse_strict_json`: size, depth, duplicate keys, finite
numbers) when it is decoded; :func:`read_records` decodes every line as a record and
names the failing line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from rampart._text import escape_hidden_json
from rampart.codec import _json
from rampart.core.errors import SchemaError

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import IO

    from rampart.codec._record import ResultRecord

__all__ = [
    "JsonlLine",
    "jsonl_line",
    "jsonl_records",
    "read_records",
    "split_jsonl",
    "stream_jsonl",
]


def jsonl_line(text: str) -> str:
    """``text`` (one JSON document) as a JSONL line, ``"\\n"`` added.

    Line breaks other than ``"\\n"`` (U+0085, U+2028, U+2029) and every other hidden
    character a terminal or an editor obeys (C1 controls, bidi overrides, zero-width
    characters: ``rampart._text.escape_hidden_json``) are written as ``\\u`` escapes.
    They can only occur inside JSON strings, where the escape decodes to the same
    character, so the record is unchanged while the line stays one line and inert.
    """
    return escape_hidden_json(text) + "\n"


def jsonl_records(records: Iterable[ResultRecord]) -> bytes:
    """Every record as one canonical ``serialize_record`` line, UTF-8."""
    from rampart.codec._record import serialize_record

    return "".join(jsonl_line(serialize_record(record=record)) for record in records).encode(
        "utf-8"
    )


@attrs.frozen(kw_only=True)
class JsonlLine:
    """One non-blank line of a JSONL input.

    ``offset`` and ``length`` are in the input's own units (bytes for ``bytes`` input),
    without the ``"\\n"``; ``complete`` is false only for a last line that has none.
    ``oversize`` lines (from :func:`stream_jsonl`) were longer than its bound and were
    not read: ``raw`` is empty.
    """

    number: int
    offset: int
    length: int
    raw: str | bytes
    complete: bool
    oversize: bool = False

    def text(self) -> str:
        """The line as text; a :class:`SchemaError` if bytes are not UTF-8."""
        if isinstance(self.raw, str):
            return self.raw
        try:
            return self.raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise SchemaError(f"$: not UTF-8 text (byte {error.start})") from None

    def value(self) -> Any:
        """The line's JSON value under the reading policy, or a :class:`SchemaError`."""
        return _json.parse_strict_json(data=self.text())


def split_jsonl(data: str | bytes) -> Iterator[JsonlLine]:
    """Every non-blank line of ``data``, split on ``"\\n"`` only, in order."""
    newline: Any = b"\n" if isinstance(data, bytes) else "\n"
    offset = 0
    number = 0
    size = len(data)
    while offset < size:
        number += 1
        end = data.find(newline, offset)
        complete = end != -1
        if not complete:
            end = size
        raw = data[offset:end]
        if raw.strip():
            yield JsonlLine(
                number=number, offset=offset, length=end - offset, raw=raw, complete=complete
            )
        offset = end + 1


def stream_jsonl(handle: IO[bytes], *, max_line_bytes: int) -> Iterator[JsonlLine]:
    """Every non-blank line of a binary stream, split as :func:`split_jsonl` splits, read
    one line at a time, so memory holds at most ``max_line_bytes`` (plus one) of it.

    A line longer than that is skipped in chunks and comes as ``oversize`` (its ``raw``
    empty, its ``offset`` and ``length`` true), so the caller can say which line it was.
    """
    offset = 0
    number = 0
    while True:
        raw = handle.readline(max_line_bytes + 1)
        if not raw:
            return
        number += 1
        start = offset
        offset += len(raw)
        complete = raw.endswith(b"\n")
        if len(raw) > max_line_bytes and not complete:
            while not complete:  # the rest of the line, in chunks
                chunk = handle.readline(max_line_bytes)
                if not chunk:
                    break
                offset += len(chunk)
                complete = chunk.endswith(b"\n")
            length = offset - start - complete
            yield JsonlLine(
                number=number,
                offset=start,
                length=length,
                raw=b"",
                complete=complete,
                oversize=True,
            )
            continue
        body = raw[:-1] if complete else raw
        if body.strip():
            yield JsonlLine(
                number=number, offset=start, length=len(body), raw=body, complete=complete
            )


def read_records(data: str | bytes, *, source: str) -> list[ResultRecord]:
    """Every record of a JSONL trace; a :class:`SchemaError` at the first bad line.

    The message starts ``<source>, line <n>:`` and then names the path and the rule.

    Each line is read by ``deserialize_record`` (the reading policy and every decoder
    rule apply). An ``UnsupportedSchemaVersionError`` is re-raised as it is, with the
    line's number added to its message.
    """
    from rampart.codec._record import deserialize_record
    from rampart.core.errors import UnsupportedSchemaVersionError

    records = []
    for line in split_jsonl(data):
        try:
            records.append(deserialize_record(data=line.text()))
        except UnsupportedSchemaVersionError as error:
            raise UnsupportedSchemaVersionError(f"{source}, line {line.number}: {error}") from None
        except SchemaError as error:
            raise SchemaError(f"{source}, line {line.number}: {error}") from None
    return records
