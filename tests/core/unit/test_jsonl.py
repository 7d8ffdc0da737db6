"""The codec's one JSONL writer and reader (``rampart.codec._jsonl``)."""

from __future__ import annotations

import io

import pytest

from rampart.codec import ResultRecord, serialize_record
from rampart.codec._jsonl import jsonl_line, jsonl_records, read_records, split_jsonl, stream_jsonl
from rampart.core.errors import SchemaError, UnsupportedSchemaVersionError
from rampart.core.result import Result, SafetyStatus


def _record(summary: str) -> ResultRecord:
    return ResultRecord(result=Result(status=SafetyStatus.SAFE, summary=summary))


def test_the_writer_escapes_unicode_line_breaks() -> None:
    """U+0085/U+2028/U+2029 become escapes, so ``splitlines()`` sees one line too."""
    line = jsonl_line('{"a":"x\u2028y\x85z\u2029"}')
    assert line == '{"a":"x\\u2028y\\u0085z\\u2029"}\n'
    assert line.splitlines() == [line[:-1]]


@pytest.mark.parametrize("kind", [str, bytes])
def test_the_reader_splits_on_newline_only_and_skips_blank_lines(kind: type) -> None:
    text = '{"a":1}\n\n  \n{"b":"\u2028"}\n{"c":'
    data = text if kind is str else text.encode("utf-8")
    lines = list(split_jsonl(data))
    assert [line.number for line in lines] == [1, 4, 5]
    assert [line.complete for line in lines] == [True, True, False]
    assert lines[1].value() == {"b": "\u2028"}
    for line in lines:
        assert data[line.offset : line.offset + line.length] == line.raw


def test_bytes_that_are_not_utf8_are_a_schema_error() -> None:
    (line,) = split_jsonl(b'{"a":"\xff"}\n')
    with pytest.raises(SchemaError, match=r"^\$: not UTF-8 text \(byte 6\)$"):
        line.value()


def test_records_round_trip_and_a_bad_line_is_named() -> None:
    records = [_record("one\u2028two"), _record("three")]
    data = jsonl_records(records)
    assert read_records(data, source="t.jsonl") == records
    bad = data + b"[" * 200 + b"]" * 200 + b"\n"
    with pytest.raises(SchemaError, match=r"^t\.jsonl, line 3: \$: JSON nesting is too deep"):
        read_records(bad, source="t.jsonl")
    other = serialize_record(record=records[0]).replace("rampart.trace.v2", "rampart.trace.v9")
    with pytest.raises(UnsupportedSchemaVersionError, match=r"^t\.jsonl, line 1: "):
        read_records(other, source="t.jsonl")


@pytest.mark.parametrize("hidden", ["\u202e", "\x9b", "\u200b", "\ufeff", "\x7f"])
def test_the_writer_escapes_hidden_characters_and_the_record_is_unchanged(hidden: str) -> None:
    # A JSONL trace printed with cat or opened in an editor must not obey a bidi
    # override or an 8-bit CSI the agent wrote.
    result = Result(status=SafetyStatus.SAFE, summary=f"before{hidden}after")
    line = jsonl_line(serialize_record(record=ResultRecord(result=result)))
    assert hidden not in line
    assert f"\\u{ord(hidden):04x}" in line
    (record,) = read_records(line.encode(), source="trace.jsonl")
    assert record.result.summary == f"before{hidden}after"


def test_the_stream_reader_splits_as_the_text_reader_does() -> None:
    """Lines, numbers, offsets, lengths and the torn last line agree with ``split_jsonl``."""
    data = b'{"a": 1}\n\n  \n{"b": "x\xe2\x80\xa8y"}\r\n{"c": 3}'
    streamed = list(stream_jsonl(io.BytesIO(data), max_line_bytes=1024))
    assert streamed == list(split_jsonl(data))
    assert [line.complete for line in streamed] == [True, True, False]


def test_a_line_over_the_bound_is_skipped_but_named_and_the_next_one_is_read() -> None:
    """The long line is never held: it comes as ``oversize`` with its true place."""
    long = b'{"x": "' + b"y" * 100 + b'"}'
    data = b'{"a": 1}\n' + long + b'\n{"b": 2}\n'
    first, skipped, last = stream_jsonl(io.BytesIO(data), max_line_bytes=16)
    assert (first.raw, first.oversize) == (b'{"a": 1}', False)
    assert (skipped.oversize, skipped.raw, skipped.complete) == (True, b"", True)
    assert (skipped.number, skipped.offset, skipped.length) == (2, 9, len(long))
    assert (last.number, last.raw, last.offset) == (3, b'{"b": 2}', 9 + len(long) + 1)
