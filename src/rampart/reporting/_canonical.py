"""Results through the canonical codec, with failures attributed to the result.

Both file sinks take every result through ``rampart.codec._record``; the JSON
report is a reshaped view of the canonical JSON, not a second serializer. The codec is
imported on first use so that importing :mod:`rampart.reporting` stays light.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rampart._text import one_line, safe_str
from rampart.reporting._errors import ReportError

if TYPE_CHECKING:
    from rampart.core.result import Result

__all__ = [
    "canonical_body",
    "check_run_metadata",
    "describe_result",
    "encode_record",
    "record_attribution",
]


def check_run_metadata(metadata: dict[str, Any]) -> None:
    """Raise :class:`ReportError` unless the run-level ``metadata`` is JSON-safe."""
    try:
        json.dumps(metadata, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError (lone surrogate) included
        raise ReportError(
            f"report.metadata must hold only JSON-safe values (finite numbers, strings, "
            f"booleans, null, lists, str-keyed objects): {safe_str(exc)}"
        ) from exc


def describe_result(result: Result, index: int) -> str:
    """``report.results[3] (test 'tests/test_x.py::test_y')`` for error messages."""
    label = f"report.results[{index}]"
    metadata = result.metadata if isinstance(result.metadata, dict) else {}
    name = metadata.get("_pytest_nodeid")
    if not isinstance(name, str):
        name = metadata.get("_pytest_test_name")
    if isinstance(name, str) and name:
        label += f" (test {one_line(name)!r})"
    return label


def _is_scalar_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates
        return False
    return True


def record_attribution(result: Result) -> tuple[str | None, int | None]:
    """``(pytest_nodeid, result_index)`` from the plugin's metadata keys, when valid.

    Attribution is optional on a record, so a missing or malformed value is left out
    rather than failing the write; the metadata itself still carries it verbatim.
    """
    metadata = result.metadata if isinstance(result.metadata, dict) else {}
    nodeid = metadata.get("_pytest_nodeid")
    if not (isinstance(nodeid, str) and _is_scalar_text(nodeid)):
        nodeid = None
    index = metadata.get("_rampart_result_index")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        index = None
    return nodeid, index


def encode_record(
    result: Result,
    index: int,
    *,
    pytest_nodeid: str | None = None,
    result_index: int | None = None,
) -> str:
    """The canonical ``rampart.trace`` JSON text of one result.

    Raises :class:`ReportError` naming the result (and chaining the codec's error, which
    names the field path) when the codec rejects it.
    """
    from rampart.codec import ResultRecord, serialize_record

    try:
        record = ResultRecord(result=result, pytest_nodeid=pytest_nodeid, result_index=result_index)
        return serialize_record(record=record)
    except (TypeError, ValueError) as exc:  # SchemaError is a ValueError
        raise ReportError(
            f"{describe_result(result, index)} cannot be written by the canonical codec: "
            f"{safe_str(exc)}"
        ) from exc


def canonical_body(result: Result, index: int) -> dict[str, Any]:
    """The canonical result body (the record's ``"result"`` object) as parsed JSON."""
    envelope = json.loads(encode_record(result, index))
    body: dict[str, Any] = envelope["result"]
    return body
