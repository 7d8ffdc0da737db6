"""The canonical, versioned ``rampart.trace`` record format.

A :class:`ResultRecord` references one live :class:`~rampart.core.result.Result` plus
optional pytest attribution. :func:`serialize_record` turns it into JSON text and
:func:`deserialize_record` reads that text back; they are the only conversion API, and
the JSON report, the JSONL trace and the xdist transport are projections of their output.

Reading is two steps: strict JSON text (``_json.parse``), then the converter's record
hook (``_envelope``: version and attribution; ``_hooks``: the body). The wire format is
owned by one cattrs converter, built on first use by ``_converter.make_converter``
(whose ``configure_converter`` docstring lists every encoding decision).
``docs/trace-schema.md`` describes the format, the decoder rules and how the schema
may evolve.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, ClassVar, Final, NamedTuple

import attrs

from rampart._redact import may_need_redaction, redact_data
from rampart.codec import _json
from rampart.codec._converter import make_converter
from rampart.codec._envelope import check_attribution
from rampart.codec._paths import PathError
from rampart.codec._schema import (
    Kind,
    ModelKind,
    StrKind,
    build_json_schema,
    envelope_kinds,
)
from rampart.core._internal import dataclass_compatible
from rampart.core.errors import SchemaError
from rampart.core.result import Result

if TYPE_CHECKING:
    from collections.abc import Callable

    import cattrs

__all__ = [
    "ResultRecord",
    "TRACE_SCHEMA_VERSION",
    "deserialize_record",
    "serialize_record",
]

TRACE_SCHEMA_VERSION: Final = "rampart.trace.v2"
"""The one root version every record carries; nested types are unversioned."""


@dataclass_compatible
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
        try:
            check_attribution(self.pytest_nodeid, self.result_index)
        except PathError as exc:
            (name,) = exc.segments
            value = getattr(self, str(name))
            raise SchemaError(
                f"ResultRecord.{name}: {exc.problem}, got {type(value).__name__}"
            ) from None

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The open Draft 2020-12 JSON Schema of this record format (a fresh dict).

        It checks structure only; :func:`deserialize_record` enforces the full contract.
        """
        return build_json_schema(record_cls=cls, version=cls.VERSION)


# --------------------------------------------------------------------------- codec state


class _Codec(NamedTuple):
    encode: Callable[[ResultRecord], Any]
    decode: Callable[..., ResultRecord]
    envelope: dict[str, Kind]
    converter: cattrs.Converter
    # The validation error and its formatter of the same cattrs import as the converter,
    # kept together so that a harness that re-imports cattrs (pytester drops modules
    # between runs) never pairs this converter with another copy's exception class.
    validation_error: type[Exception]
    transform_error: Callable[..., list[str]]


@functools.cache
def _codec_state() -> _Codec:
    """The module's one converter (see ``_converter.configure_converter``), built on first use.

    Building it lazily keeps ``import rampart.codec._record`` free of cattrs.
    """
    import cattrs  # deferred: importing the codec stays light

    converter = make_converter(record_cls=ResultRecord, version=TRACE_SCHEMA_VERSION)
    envelope: dict[str, Kind] = {
        "version": StrKind(),
        "result": ModelKind(Result),
        **envelope_kinds(ResultRecord),
    }
    return _Codec(
        encode=converter.get_unstructure_hook(ResultRecord),
        decode=converter.get_structure_hook(ResultRecord),
        envelope=envelope,
        converter=converter,
        validation_error=cattrs.BaseValidationError,
        transform_error=cattrs.transform_error,
    )


# --------------------------------------------------------------------------- public API


def serialize_record(*, record: ResultRecord) -> str:
    """The canonical JSON text of ``record``.

    The live result is validated against the trace contract at this boundary and is
    never mutated. Raises :class:`SchemaError` naming the failing path.

    Serializing is where a result leaves the process (the JSONL trace, the JSON
    report, the xdist transport), so every string of the record passes the redaction
    policy (``rampart._redact``) here: known secrets, URL user info and password-like
    query values are masked.
    """
    codec = _codec_state()
    try:
        document = codec.encode(record)
        text = _json.dump(document)
        if may_need_redaction(text):
            document = redact_data(document)
            text = _json.dump(document)
    except PathError as exc:
        raise SchemaError(exc.render()) from None
    except RecursionError:
        raise SchemaError("$.result: nesting is too deep to encode") from None
    try:  # what is written must read back under the reading policy
        _json.check_limits(text)
    except SchemaError as exc:
        raise SchemaError(f"$.result: {str(exc).removeprefix('$: ')} to encode") from None
    if _json.text_has_surrogates(text):
        located = _json.find_surrogate(document, codec.envelope)
        raise SchemaError(
            located.render() if located else "$: expected strings of Unicode scalar values"
        )
    return text


def deserialize_record(*, data: str) -> ResultRecord:
    """Read one record from JSON text.

    The text must be strict JSON (finite numbers, no duplicate keys, Unicode scalar
    strings); then the version is checked before the body is read. Raises
    :class:`SchemaError` for anything that is not a valid ``rampart.trace.v2`` record
    (the message names the path and what was expected, never the data) and
    :class:`UnsupportedSchemaVersionError` for any other version.
    """
    text = _json.check_text(data)
    codec = _codec_state()
    document = _json.parse(text, codec.envelope)
    try:
        record: ResultRecord = codec.decode(document)
    except PathError as exc:
        raise SchemaError(exc.render()) from None
    except RecursionError:
        raise SchemaError("$: nesting is too deep to decode") from None
    return record
