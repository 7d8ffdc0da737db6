"""The record envelope: ``{"version", "result", "pytest_nodeid"?, "result_index"?}``.

Everything about the envelope is checked here and only here: the version (fail closed
on any other, before the body is read) and the attribution (``pytest_nodeid``: a
string of Unicode scalar values or ``None``; ``result_index``: an int ``>= 0`` or
``None``). ``ResultRecord``'s constructor, the record encoder and the record decoder
all call :func:`check_attribution`; the body is left to the compiled ``Result`` hooks.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any

from rampart.codec._json import text_has_surrogates
from rampart.codec._paths import NO_VALUE, PathError
from rampart.core.errors import UnsupportedSchemaVersionError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["check_attribution", "check_version", "record_decoder", "record_encoder"]

# Live values are Python objects; parsed values are JSON, so the wording follows suit.
_NODEID_LIVE = "expected a str of Unicode scalar values or None"
_INDEX_LIVE = "expected an int >= 0 (not a bool) or None"
_NODEID_PARSED = "expected a string or null"
_INDEX_PARSED = "expected an integer >= 0 in integer notation or null"


def check_version(document: dict[str, Any], version: str) -> None:
    """Fail closed on anything but ``version``, before the body is read."""
    found = document.get("version", NO_VALUE)
    if found is NO_VALUE:
        raise PathError("required field is missing", NO_VALUE, "version")
    if type(found) is not str:
        raise PathError("expected a string", found, "version")
    if found != version:
        raise UnsupportedSchemaVersionError(
            f"$.version: unsupported trace schema version; this reader supports only "
            f"{version!r} and never reads another major"
        )


def check_attribution(nodeid: object, index: object, *, parsed: bool = False) -> None:
    """Raise :class:`PathError` unless the attribution fields are valid.

    ``parsed`` says the values come from JSON text, whose strings the parser has
    already proved to be Unicode scalar values.
    """
    if nodeid is not None:
        if parsed:
            if type(nodeid) is not str:
                raise PathError(_NODEID_PARSED, nodeid, "pytest_nodeid")
        elif not isinstance(nodeid, str) or text_has_surrogates(nodeid):
            got = nodeid if not isinstance(nodeid, str) else NO_VALUE
            raise PathError(_NODEID_LIVE, got, "pytest_nodeid")
    if index is not None and (type(index) is not int or index < 0):
        if parsed:
            got = index if type(index) is not int else NO_VALUE
            raise PathError(_INDEX_PARSED, got, "result_index")
        raise PathError(_INDEX_LIVE, index, "result_index")


def record_decoder(
    record_cls: type, version: str, decode_result: Callable[..., Any]
) -> Callable[..., Any]:
    """The structure hook of ``record_cls``: envelope checks around the ``Result`` hook."""

    def decode_record(document: Any, _type: Any = None) -> Any:
        if type(document) is not dict:
            raise PathError("expected an object", document)
        check_version(document, version)
        body = document.get("result", NO_VALUE)
        if body is NO_VALUE:
            raise PathError("required field is missing", NO_VALUE, "result")
        try:
            result = decode_result(body)
        except PathError as exc:
            exc.segments.append("result")
            raise
        nodeid = document.get("pytest_nodeid")
        index = document.get("result_index")
        check_attribution(nodeid, index, parsed=True)
        return record_cls(result=result, pytest_nodeid=nodeid, result_index=index)

    return decode_record


def record_encoder(
    record_cls: type, version: str, encode_result: Callable[..., Any]
) -> Callable[[Any], dict[str, Any]]:
    """The unstructure hook of ``record_cls``; attribution is re-checked because a frozen
    record can still be changed behind its constructor's back."""

    def encode_record(record: Any) -> dict[str, Any]:
        if not isinstance(record, record_cls):
            raise PathError(f"expected a {record_cls.__name__}", record)
        record = typing.cast("Any", record)
        try:
            body = encode_result(record.result)
        except PathError as exc:
            exc.segments.append("result")
            raise
        nodeid, index = record.pytest_nodeid, record.result_index
        check_attribution(nodeid, index)
        document = {"version": version, "result": body}
        if nodeid is not None:
            document["pytest_nodeid"] = nodeid
        if index is not None:
            document["result_index"] = index
        return document

    return encode_record
