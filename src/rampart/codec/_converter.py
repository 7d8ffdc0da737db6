"""The cattrs wiring: one converter whose hooks are the compiled ``rampart.trace`` hooks.

:func:`configure_converter`'s docstring is the wire specification: every encoding
decision of the format, in one list.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any

import attrs

from rampart.codec._envelope import record_decoder, record_encoder
from rampart.codec._hooks import compile_decoder, compile_encoder, nested_models
from rampart.codec._schema import TRACE_MODELS, model_spec

if TYPE_CHECKING:
    from collections.abc import Callable

    import cattrs

__all__ = ["configure_converter", "make_converter"]


def make_converter(*, record_cls: type, version: str) -> cattrs.Converter:
    """A new cattrs converter that speaks ``version`` for ``record_cls`` records.

    See :func:`configure_converter` for every encoding decision it makes.
    """
    import cattrs  # deferred: importing the codec module stays light

    converter = cattrs.Converter()
    configure_converter(converter, record_cls=record_cls, version=version)
    return converter


def configure_converter(converter: cattrs.Converter, *, record_cls: type, version: str) -> None:
    """Register the ``rampart.trace`` hooks on ``converter`` (never the global converter).

    Every encoding decision of the format:

    * The record is ``{"version", "result", "pytest_nodeid"?, "result_index"?}``; the
      last two are omitted when ``None``. ``version`` is the one supported version; any
      other string (``rampart.trace.v1`` included) fails closed with
      ``UnsupportedSchemaVersionError`` before the body is read.
    * Every field of every traced attrs class is written, under its attribute name and
      in field order, defaults included; ``Result.safe`` is derived and never written.
    * Enums are written as their ``value``. The closed enums (SafetyStatus, EvalOutcome,
      EvaluationPurpose, TraceEndReason, ObservabilityLevel, PayloadFormat) fail closed
      on an unknown value. ``harm_category`` is a passthrough string: known labels
      decode to ``HarmCategory`` members, any other label round-trips as a ``str``.
    * Datetimes are written with ``isoformat()`` and read with ``fromisoformat()``
      (naive and sub-minute offsets included; a sub-second offset, which
      ``fromisoformat`` would read as UTC, is rejected on encode).
    * Floats must be finite; an int is accepted for a float field and becomes a float.
      Integer fields take ints in integer notation, never booleans or ``0.0``; boolean
      fields (``InjectionRecord.delivered``) take JSON booleans only, never ``0``/``1``.
      ``duration_seconds`` is ``>= 0``.
    * An ``EvalResult`` is evaluator output (user code), so on encode only it is first
      normalised as the engine normalises what evaluators return: a non-string
      ``rationale`` is written as its text (``"<unprintable value>"`` if it has none),
      evidence and gap lists as lists of text (a bare string is one entry), and a
      confidence that is NaN, infinite or not a number ("no usable confidence") as
      ``0.0``. The outcome is never normalised. The decoder is as strict as ever
      (finite numbers, strings), so every record written stays valid.
    * Free-form mappings (``metadata``, ``arguments``, ``details``) hold JSON values
      only: ``None``, ``str``, ``bool``, ``int``, finite ``float``, ``list`` and
      ``dict`` with ``str`` keys (subclasses included, written as their JSON value).
      Tuples, sets, bytes, cycles, non-str keys and other objects are rejected, never
      coerced; keys are never filtered.
    * Strings and mapping keys must be Unicode scalar values (no lone surrogates).
    * An object names each member once: a duplicate key anywhere in the text is
      rejected (the parser's job, before the version is read). The text nests at most
      128 arrays/objects deep and is at most 256 Mi characters (checked on the text
      before parsing); the writer refuses a record the reader would refuse.
    * Payloads: ``format`` is ``text``, ``html`` or ``markdown``; binary formats and a
      non-null ``artifact`` are rejected both ways; ``id`` is required on decode.
    * Cross-field rules: a request has a prompt or at least one attachment; a turn's
      ``eval_purpose`` requires its ``eval_result``; a population has a non-empty
      ``id``, ``size >= 1``, ``0 <= index < size`` and ``threshold`` in ``[0, 1]``.
    * Decoding: missing fields take their defaults, ``null`` only where the field is
      nullable, unknown members are ignored at every level, no str/bool/int coercion.
    * Failures raise ``SchemaError`` naming the JSON path and what was expected, never
      the value. The writer checks the live result and never mutates it.

    The structure hooks consume the output of ``rampart.codec._json.parse`` (strict JSON
    text: finite numbers, unique keys, Unicode scalar strings); ``deserialize_record``
    runs both, so use it rather than structuring by hand.
    """

    def is_trace_model(cls: Any) -> bool:
        return cls in TRACE_MODELS

    def structure_factory(cls: type, conv: cattrs.Converter) -> Callable[..., Any]:
        spec = model_spec(cls)
        nested = {model: conv.get_structure_hook(model) for model in nested_models(spec)}
        return compile_decoder(spec, nested)

    def unstructure_factory(cls: type, conv: cattrs.Converter) -> Callable[..., Any]:
        spec = model_spec(cls)
        nested = {model: conv.get_unstructure_hook(model) for model in nested_models(spec)}
        return compile_encoder(spec, nested)

    converter.register_structure_hook_factory(is_trace_model, structure_factory)
    converter.register_unstructure_hook_factory(is_trace_model, unstructure_factory)
    result_cls = next(field.type for field in attrs.fields(record_cls) if field.name == "result")
    if isinstance(result_cls, str):
        result_cls = typing.get_type_hints(record_cls)["result"]
    converter.register_structure_hook(
        record_cls,
        record_decoder(record_cls, version, converter.get_structure_hook(result_cls)),
    )
    converter.register_unstructure_hook(
        record_cls,
        record_encoder(record_cls, version, converter.get_unstructure_hook(result_cls)),
    )
