"""The canonical, versioned ``rampart.trace`` record format.

A :class:`ResultRecord` references one live :class:`~rampart.core.result.Result` plus
optional pytest attribution. :func:`serialize_record` turns it into JSON text and
:func:`deserialize_record` reads that text back; they are the only conversion API, and
the JSON report and the xdist transport are projections of their output.

The wire format is owned by one cattrs converter built by :func:`make_converter`; the
rules it enforces live in :mod:`rampart.core._schema` (what the contract is) and
:mod:`rampart.core._codec` (how it is enforced). ``docs/trace-schema.md`` describes the
format, the decoder rules and how the schema may evolve.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, ClassVar, Final, NamedTuple

import attrs

from rampart.core import _codec
from rampart.core._schema import (
    TRACE_MODELS,
    Kind,
    ModelKind,
    StrKind,
    build_json_schema,
    envelope_kinds,
    model_spec,
)
from rampart.core.errors import SchemaError, UnsupportedSchemaVersionError
from rampart.core.result import Result

if TYPE_CHECKING:
    from collections.abc import Callable

    import cattrs

__all__ = [
    "TRACE_SCHEMA_VERSION",
    "ResultRecord",
    "deserialize_record",
    "serialize_record",
]

TRACE_SCHEMA_VERSION: Final = "rampart.trace.v2"
"""The one root version every record carries; nested types are unversioned."""

_MISSING: Final[Any] = _codec.NO_VALUE
_NODEID_PROBLEM = "expected a str of Unicode scalar values or None"
_INDEX_PROBLEM = "expected an int >= 0 (not a bool) or None"


@attrs.frozen(kw_only=True)
class ResultRecord:
    """One result on the wire, with optional pytest attribution.

    The record references ``result``; neither construction nor serialization copies or
    mutates it. ``pytest_nodeid`` and ``result_index`` are omitted from the JSON when
    ``None``.
    """

    VERSION: ClassVar[str] = TRACE_SCHEMA_VERSION

    result: Result
    pytest_nodeid: str | None = None
    result_index: int | None = None

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.result, Result):
            raise SchemaError(
                f"ResultRecord.result: expected a Result, got {type(self.result).__name__}"
            )
        nodeid = self.pytest_nodeid
        if nodeid is not None and not (
            isinstance(nodeid, str) and not _codec.text_has_surrogates(nodeid)
        ):
            raise SchemaError(
                f"ResultRecord.pytest_nodeid: {_NODEID_PROBLEM}, got {type(nodeid).__name__}"
            )
        index = self.result_index
        if index is not None and (type(index) is not int or index < 0):
            raise SchemaError(
                f"ResultRecord.result_index: {_INDEX_PROBLEM}, got {type(index).__name__}"
            )

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The open Draft 2020-12 JSON Schema of this record format (a fresh dict).

        It checks structure only; :func:`deserialize_record` enforces the full contract.
        """
        return build_json_schema(record_cls=cls, version=cls.VERSION)


# --------------------------------------------------------------------------- converter


def make_converter() -> cattrs.Converter:
    """A new cattrs converter that speaks ``rampart.trace.v2``.

    See :func:`configure_converter` for every encoding decision it makes.
    """
    import cattrs

    converter = cattrs.Converter()
    configure_converter(converter)
    return converter


def configure_converter(converter: cattrs.Converter) -> None:
    """Register the ``rampart.trace.v2`` hooks on ``converter``.

    Every encoding decision of the format:

    * The record is ``{"version", "result", "pytest_nodeid"?, "result_index"?}``; the
      last two are omitted when ``None``. ``version`` is ``"rampart.trace.v2"``; any
      other string (``rampart.trace.v1`` included) fails closed with
      ``UnsupportedSchemaVersionError`` before anything else is read.
    * Every field of every traced attrs class is written, under its attribute name and
      in field order, defaults included; ``Result.safe`` is derived and never written.
    * Enums are written as their ``value``. The closed enums (SafetyStatus, EvalOutcome,
      EvaluationPurpose, TraceEndReason, ObservabilityLevel, PayloadFormat) fail closed
      on an unknown value. ``harm_category`` is a passthrough string: known labels
      decode to ``HarmCategory`` members, any other label round-trips as a ``str``.
    * Datetimes are written with ``isoformat()`` and read with ``fromisoformat()``
      (naive and sub-minute offsets included).
    * Floats must be finite; an int is accepted for a float field and becomes a float.
      Integer fields take ints in integer notation, never booleans or ``0.0``.
    * Free-form mappings (``metadata``, ``arguments``, ``details``) hold JSON values
      only: ``None``, ``str``, ``bool``, ``int``, finite ``float``, ``list`` and
      ``dict`` with ``str`` keys. Tuples, sets, bytes, cycles, non-str keys and other
      objects are rejected, never coerced; metadata keys are never filtered.
    * Strings and mapping keys must be Unicode scalar values (no lone surrogates).
    * Payloads: ``format`` is ``text``, ``html`` or ``markdown``; binary formats and a
      non-null ``artifact`` are rejected both ways; ``id`` is required on decode.
    * Cross-field rules: a request has a prompt or at least one attachment; a turn's
      ``eval_purpose`` requires its ``eval_result``; a population has a non-empty
      ``id``, ``size >= 1``, ``0 <= index < size`` and ``threshold`` in ``[0, 1]``.
    * Decoding: missing fields take their defaults, ``null`` only where the field is
      nullable, unknown members are ignored at every level, no str/bool/int coercion.
    * Failures raise ``SchemaError`` naming the JSON path and what was expected, never
      the value. The writer checks the live result and never mutates it.

    The structure hooks consume output of the codec's JSON parser (finite numbers,
    checked text); use :func:`deserialize_record` rather than structuring by hand.
    """

    def is_trace_model(cls: Any) -> bool:
        return cls in TRACE_MODELS

    def structure_factory(cls: type, conv: cattrs.Converter) -> Callable[..., Any]:
        spec = model_spec(cls)
        nested = {model: conv.get_structure_hook(model) for model in _codec.nested_models(spec)}
        return _codec.compile_decoder(spec, nested)

    def unstructure_factory(cls: type, conv: cattrs.Converter) -> Callable[..., Any]:
        spec = model_spec(cls)
        nested = {model: conv.get_unstructure_hook(model) for model in _codec.nested_models(spec)}
        return _codec.compile_encoder(spec, nested)

    converter.register_structure_hook_factory(is_trace_model, structure_factory)
    converter.register_unstructure_hook_factory(is_trace_model, unstructure_factory)
    converter.register_structure_hook(
        ResultRecord, _record_decoder(converter.get_structure_hook(Result))
    )
    converter.register_unstructure_hook(
        ResultRecord, _record_encoder(converter.get_unstructure_hook(Result))
    )


def _check_version(document: dict[str, Any]) -> None:
    version = document.get("version", _MISSING)
    if version is _MISSING:
        raise _codec.PathError("required field is missing", _MISSING, "version")
    if type(version) is not str:
        raise _codec.PathError("expected a string", version, "version")
    if version != TRACE_SCHEMA_VERSION:
        raise UnsupportedSchemaVersionError(
            f"$.version: unsupported trace schema version; this reader supports only "
            f"{TRACE_SCHEMA_VERSION!r} and never reads another major"
        )


def _record_decoder(decode_result: Callable[..., Any]) -> Callable[..., ResultRecord]:
    def decode_record(document: Any, _type: Any = None) -> ResultRecord:
        if type(document) is not dict:
            raise _codec.PathError("expected an object", document)
        _check_version(document)
        body = document.get("result", _MISSING)
        if body is _MISSING:
            raise _codec.PathError("required field is missing", _MISSING, "result")
        try:
            result = decode_result(body)
        except _codec.PathError as exc:
            exc.segments.append("result")
            raise
        nodeid = document.get("pytest_nodeid")
        if nodeid is not None and type(nodeid) is not str:
            raise _codec.PathError("expected a string or null", nodeid, "pytest_nodeid")
        index = document.get("result_index")
        if index is not None and (type(index) is not int or index < 0):
            raise _codec.PathError(
                "expected an integer >= 0 in integer notation or null",
                index if type(index) is not int else _MISSING,
                "result_index",
            )
        return ResultRecord(result=result, pytest_nodeid=nodeid, result_index=index)

    return decode_record


def _record_encoder(encode_result: Callable[..., Any]) -> Callable[[ResultRecord], Any]:
    def encode_record(record: ResultRecord) -> dict[str, Any]:
        if not isinstance(record, ResultRecord):
            raise _codec.PathError("expected a ResultRecord", record)
        try:
            body = encode_result(record.result)
        except _codec.PathError as exc:
            exc.segments.append("result")
            raise
        document = {"version": TRACE_SCHEMA_VERSION, "result": body}
        nodeid = record.pytest_nodeid
        if nodeid is not None:
            if not isinstance(nodeid, str):
                raise _codec.PathError(_NODEID_PROBLEM, nodeid, "pytest_nodeid")
            document["pytest_nodeid"] = nodeid
        index = record.result_index
        if index is not None:
            if type(index) is not int or index < 0:
                raise _codec.PathError(_INDEX_PROBLEM, index, "result_index")
            document["result_index"] = index
        return document

    return encode_record


class _Codec(NamedTuple):
    converter: cattrs.Converter
    encode: Callable[[ResultRecord], Any]
    decode: Callable[..., ResultRecord]
    envelope: dict[str, Kind]


@functools.cache
def _codec_state() -> _Codec:
    """The module's one converter, built on first use so importing stays light."""
    converter = make_converter()
    envelope: dict[str, Kind] = {
        "version": StrKind(),
        "result": ModelKind(Result),
        **envelope_kinds(ResultRecord),
    }
    return _Codec(
        converter=converter,
        encode=converter.get_unstructure_hook(ResultRecord),
        decode=converter.get_structure_hook(ResultRecord),
        envelope=envelope,
    )


# --------------------------------------------------------------------------- public API


def serialize_record(*, record: ResultRecord) -> str:
    """The canonical JSON text of ``record``.

    The live result is validated against the trace contract at this boundary and is
    never mutated. Raises :class:`SchemaError` naming the failing path.
    """
    codec = _codec_state()
    try:
        document = codec.encode(record)
        text = _codec.dump_json(document)
    except _codec.PathError as exc:
        raise SchemaError(exc.render()) from None
    except RecursionError:
        raise SchemaError("$.result: nesting is too deep to encode") from None
    if _codec.text_has_surrogates(text):
        located = _codec.find_surrogate(document, codec.envelope)
        raise SchemaError(
            located.render() if located else "$: expected strings of Unicode scalar values"
        )
    return text


def deserialize_record(*, data: str) -> ResultRecord:
    """Read one record from JSON text.

    Raises :class:`SchemaError` for anything that is not a valid ``rampart.trace.v2``
    record (the message names the path and what was expected, never the data) and
    :class:`UnsupportedSchemaVersionError` for any other version.
    """
    if not isinstance(data, str):
        raise SchemaError(f"data: expected JSON text as a str, got {type(data).__name__}")
    codec = _codec_state()
    document = _codec.parse_json(data)
    try:
        if type(document) is not dict:
            raise _codec.PathError("expected an object", document)
        _check_version(document)
        if _codec.may_hold_surrogates(data):
            located = _codec.find_surrogate(document, codec.envelope)
            if located is not None:
                raise located
        record: ResultRecord = codec.decode(document)
    except _codec.PathError as exc:
        raise SchemaError(exc.render()) from None
    except RecursionError:
        raise SchemaError("$: nesting is too deep to decode") from None
    return record
