"""The ``rampart.trace`` body contract, derived from the attrs models.

Every traced class is described by a :class:`ModelSpec`: one :class:`FieldSpec` per attrs
field, whose *kind* comes from the field's annotation and whose default comes from the
live constructor. A short policy table adds what the trace narrows or forbids (payload
ids are recorded, never generated; binary payloads and file artifacts have no trace
representation; population bounds) and the cross-field rules (a request carries
something, an evaluation purpose comes with an evaluation, ``index < size``).

The same specs drive the codec (:mod:`rampart.codec._hooks` compiles them into
encode/decode hooks) and the JSON Schema (:func:`build_json_schema`), so the two cannot
drift apart. A field whose annotation has no trace representation fails loudly here
instead of being guessed.
"""

from __future__ import annotations

import enum
import functools
import inspect
import types
import typing
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeAlias, Union

import attrs

from rampart.core._internal import PopulationRef, normalise_evaluation
from rampart.core.result import InjectionRecord, Result
from rampart.core.types import (
    EvalResult,
    Payload,
    PayloadFormat,
    Request,
    Response,
    SideEffect,
    ToolCall,
    Turn,
)

__all__ = [
    "TRACE_MODELS",
    "AnyPresent",
    "BoolKind",
    "DateTimeKind",
    "EnumKind",
    "FieldSpec",
    "FloatKind",
    "IntKind",
    "JsonObjectKind",
    "Kind",
    "LessThan",
    "ListKind",
    "ModelKind",
    "ModelSpec",
    "NullKind",
    "NullableKind",
    "PassthroughKind",
    "Requires",
    "Rule",
    "StrKind",
    "build_json_schema",
    "model_spec",
]

# --------------------------------------------------------------------------- kinds


@attrs.frozen
class StrKind:
    """A string of Unicode scalar values, at least ``min_length`` long."""

    min_length: int = 0


@attrs.frozen
class BoolKind:
    """A JSON boolean (never an integer)."""


@attrs.frozen
class IntKind:
    """An integer written in integer notation (never ``1.0``, never a boolean)."""

    minimum: int | None = None


@attrs.frozen
class FloatKind:
    """A finite number; integers are accepted and become floats.

    ``non_finite``: when not ``None``, the encoder writes a NaN or infinite live value
    as this number instead of rejecting it (the decoder still reads finite numbers only).
    """

    minimum: float | None = None
    maximum: float | None = None
    non_finite: float | None = None


@attrs.frozen
class EnumKind:
    """A closed enum: only ``values`` are accepted, anything else fails closed."""

    enum: type[enum.Enum]
    values: tuple[str, ...]
    note: str = ""


@attrs.frozen
class PassthroughKind:
    """Any string; known labels of ``enum`` decode to its members (``HarmCategory``)."""

    enum: type[enum.Enum]


@attrs.frozen
class DateTimeKind:
    """A ``datetime`` written with ``isoformat()`` and read with ``fromisoformat()``."""


@attrs.frozen
class JsonObjectKind:
    """A free-form string-keyed mapping holding JSON values only."""


@attrs.frozen
class NullKind:
    """A field the trace cannot represent except as ``null`` (``Payload.artifact``)."""

    reason: str


@attrs.frozen
class ListKind:
    """A JSON array of ``item``."""

    item: Kind


@attrs.frozen
class NullableKind:
    """``inner`` or ``null``."""

    inner: Kind


@attrs.frozen
class ModelKind:
    """A nested traced attrs class."""

    cls: type


Kind: TypeAlias = (
    StrKind
    | BoolKind
    | IntKind
    | FloatKind
    | EnumKind
    | PassthroughKind
    | DateTimeKind
    | JsonObjectKind
    | NullKind
    | ListKind
    | NullableKind
    | ModelKind
)

# --------------------------------------------------------------------------- rules


@attrs.frozen
class AnyPresent:
    """At least one of ``fields`` is non-null and, for arrays, non-empty."""

    fields: tuple[str, ...]
    expected: str


@attrs.frozen
class Requires:
    """A non-null ``field`` requires a non-null ``required``."""

    field: str
    required: str
    expected: str


@attrs.frozen
class LessThan:
    """``field < bound``; JSON Schema cannot say this, so it lands in the description."""

    field: str
    bound: str
    expected: str


Rule: TypeAlias = AnyPresent | Requires | LessThan


# --------------------------------------------------------------------------- specs

_NO_DEFAULT: Any = object()


@attrs.frozen
class FieldSpec:
    """One field: its JSON key (the attribute name), kind and decode default."""

    name: str
    kind: Kind
    required: bool
    default: Any = _NO_DEFAULT
    default_factory: Callable[[], Any] | None = None


@attrs.frozen
class ModelSpec:
    """Everything the codec and the JSON Schema need to know about one traced class."""

    cls: type
    fields: tuple[FieldSpec, ...]
    rules: tuple[Rule, ...] = ()
    description: str | None = None
    prepare: Callable[[Any], Any] | None = None
    """On encode, the live value goes through this first (``EvalResult``: see
    :func:`_prepare_evaluation`)."""


TRACE_MODELS: tuple[type, ...] = (
    Result,
    Turn,
    Request,
    Response,
    Payload,
    ToolCall,
    SideEffect,
    EvalResult,
    InjectionRecord,
    PopulationRef,
)
"""The attrs classes a ``rampart.trace`` result body is built from."""

_TEXT_FORMATS = tuple(member.value for member in PayloadFormat if member.is_text)

# Trace-only narrowing of the live models (docs/trace-schema.md, "What the reader
# enforces"): bounds and formats the live constructors do not check.
_KIND_OVERRIDES: dict[tuple[type, str], Kind] = {
    (Payload, "format"): EnumKind(
        PayloadFormat,
        _TEXT_FORMATS,
        "binary payload formats are not supported by rampart.trace.v2",
    ),
    (Payload, "artifact"): NullKind(
        "file artifacts and binary payloads are not supported by rampart.trace.v2"
    ),
    (PopulationRef, "id"): StrKind(min_length=1),
    (PopulationRef, "index"): IntKind(minimum=0),
    (PopulationRef, "size"): IntKind(minimum=1),
    (PopulationRef, "threshold"): FloatKind(minimum=0.0, maximum=1.0),
    (PopulationRef, "confidence"): NullableKind(FloatKind(minimum=0.0, maximum=1.0)),
    (PopulationRef, "max_unsafe"): NullableKind(IntKind(minimum=0)),
    (PopulationRef, "executed"): NullableKind(IntKind(minimum=0)),
    (PopulationRef, "no_result"): NullableKind(IntKind(minimum=0)),
    (Result, "duration_seconds"): FloatKind(minimum=0.0),
    # An evaluator's confidence is user output: NaN or infinity means "no usable
    # confidence" and is written as 0.0 rather than losing the record (docs/trace-schema.md).
    (EvalResult, "confidence"): FloatKind(non_finite=0.0),
}

# Fields the live constructor defaults but a record must carry: a payload id is
# recorded, never generated; the observability level is a choice someone made.
_REQUIRED_ON_WIRE = frozenset({(Payload, "id"), (Result, "observability_level")})

_RULES: dict[type, tuple[Rule, ...]] = {
    Request: (AnyPresent(("prompt", "attachments"), "a prompt or at least one attachment"),),
    Turn: (
        Requires(
            "eval_purpose",
            "eval_result",
            "an evaluation because eval_purpose is set (a purpose needs an evaluation)",
        ),
    ),
    PopulationRef: (LessThan("index", "size", "an index less than the population size"),),
}


def _is_text_list(value: object) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def _prepare_evaluation(evaluation: EvalResult) -> EvalResult:
    """``evaluation`` as is when its fields have their declared types, else a normalised copy.

    An ``EvalResult`` is evaluator output, and an evaluator is user code: the engine
    normalises what evaluators return (``rampart.core._contract.normalise_evaluation``),
    and the writer applies the same rule to one built by hand, so odd text (a
    rationale that is not a string, evidence that is a bare string) is recorded as
    its text rather than losing the whole record. The outcome is never touched: an
    outcome that is not an ``EvalOutcome`` still fails the record.
    """
    try:
        well_formed = (
            type(evaluation.rationale) is str
            and _is_text_list(evaluation.evidence)
            and _is_text_list(evaluation.undetermined_operands)
            and type(evaluation.confidence) is float
        )
    except Exception:  # a subclass property that raises
        well_formed = False
    return evaluation if well_formed else normalise_evaluation(evaluation)


_PREPARE: dict[type, Callable[[Any], Any]] = {EvalResult: _prepare_evaluation}

_DESCRIPTIONS: dict[type, str] = {
    Payload: (
        "Recorded text payload. Binary formats and file artifacts are not supported by "
        "this trace schema."
    ),
    PopulationRef: (
        "Trial population provenance. The decoder additionally requires index to be less than size."
    ),
}


def _kind_for(annotation: Any, where: str) -> Kind:
    if annotation is str:
        return StrKind()
    if annotation is bool:
        return BoolKind()
    if annotation is int:
        return IntKind()
    if annotation is float:
        return FloatKind()
    if annotation is datetime:
        return DateTimeKind()
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return EnumKind(annotation, tuple(member.value for member in annotation))
    if isinstance(annotation, type) and annotation in TRACE_MODELS:
        return ModelKind(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is list and len(args) == 1:
        return ListKind(_kind_for(args[0], where))
    if origin is dict and args == (str, Any):
        return JsonObjectKind()
    if origin in (Union, types.UnionType):
        members = [arg for arg in args if arg is not type(None)]
        nullable = len(members) < len(args)
        inner: Kind
        if len(members) == 2 and str in members:
            (label,) = (arg for arg in members if arg is not str)
            if not (isinstance(label, type) and issubclass(label, enum.Enum)):
                raise TypeError(f"{where}: no trace representation for {annotation!r}")
            inner = PassthroughKind(label)
        elif len(members) == 1:
            inner = _kind_for(members[0], where)
        else:
            raise TypeError(f"{where}: no trace representation for {annotation!r}")
        return NullableKind(inner) if nullable else inner
    raise TypeError(f"{where}: no trace representation for {annotation!r}")


def _constructor_defaults(cls: type) -> dict[str, Any]:
    """Defaults of a class with a hand-written ``__init__`` (``Result``)."""
    if getattr(cls, "__attrs_init__", None) is None:
        return {}
    parameters = inspect.signature(cls).parameters
    return {
        name: parameter.default
        for name, parameter in parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }


def _field_spec(
    cls: type, field: attrs.Attribute[Any], annotation: Any, ctor: dict[str, Any]
) -> FieldSpec:
    where = f"{cls.__name__}.{field.name}"
    kind = _KIND_OVERRIDES.get((cls, field.name)) or _kind_for(annotation, where)
    if (cls, field.name) in _REQUIRED_ON_WIRE:
        return FieldSpec(name=field.name, kind=kind, required=True)
    default: Any = field.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        factory = default.factory
        if factory not in (list, dict) or default.takes_self:
            raise TypeError(f"{where}: a generated default needs an explicit trace policy")
        return FieldSpec(name=field.name, kind=kind, required=False, default_factory=factory)
    if default is not attrs.NOTHING:
        return FieldSpec(name=field.name, kind=kind, required=False, default=default)
    if field.name not in ctor:
        return FieldSpec(name=field.name, kind=kind, required=True)
    value = ctor[field.name]
    # A hand-written constructor maps ``None`` to a fresh container for list/dict fields.
    if value is None and isinstance(kind, ListKind):
        return FieldSpec(name=field.name, kind=kind, required=False, default_factory=list)
    if value is None and isinstance(kind, JsonObjectKind):
        return FieldSpec(name=field.name, kind=kind, required=False, default_factory=dict)
    return FieldSpec(name=field.name, kind=kind, required=False, default=value)


@functools.cache
def model_spec(cls: type) -> ModelSpec:
    """The spec of one traced class, derived from its attrs fields and annotations."""
    if cls not in TRACE_MODELS:
        raise TypeError(f"{cls.__name__} is not part of the rampart.trace body")
    hints = typing.get_type_hints(cls)
    ctor = _constructor_defaults(cls)
    fields = tuple(_field_spec(cls, field, hints[field.name], ctor) for field in attrs.fields(cls))
    return ModelSpec(
        cls=cls,
        fields=fields,
        rules=_RULES.get(cls, ()),
        description=_DESCRIPTIONS.get(cls),
        prepare=_PREPARE.get(cls),
    )


def envelope_kinds(record_cls: type) -> dict[str, Kind]:
    """Kinds of the record attribution fields (``pytest_nodeid``, ``result_index``)."""
    hints = typing.get_type_hints(record_cls)
    kinds: dict[str, Kind] = {}
    for field in attrs.fields(record_cls):
        if field.name == "result":
            continue
        kind = _kind_for(hints[field.name], f"{record_cls.__name__}.{field.name}")
        if field.name == "result_index":
            kind = NullableKind(IntKind(minimum=0))
        kinds[field.name] = kind
    return kinds


# --------------------------------------------------------------------------- JSON Schema

_ROOT_DESCRIPTION = (
    "Structural trace contract. The record decoder additionally requires parseable Python "
    "ISO datetimes, finite numbers, Unicode scalar strings, and integer fields without "
    "floating-point notation."
)
_DATETIME_DESCRIPTION = (
    "Python ISO 8601 datetime (datetime.isoformat); a UTC offset is optional. "
    "Parseability with datetime.fromisoformat is enforced by the record decoder, "
    "not this schema."
)


def _to_json(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


class _SchemaBuilder:
    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}

    def ref(self, name: str) -> dict[str, Any]:
        return {"$ref": f"#/$defs/{name}"}

    def enum_def(self, enum_cls: type[enum.Enum]) -> dict[str, Any]:
        self.defs.setdefault(
            enum_cls.__name__,
            {
                "enum": [member.value for member in enum_cls],
                "title": enum_cls.__name__,
                "type": "string",
            },
        )
        return self.ref(enum_cls.__name__)

    def kind(self, kind: Kind) -> dict[str, Any]:
        if isinstance(kind, StrKind):
            schema: dict[str, Any] = {"type": "string"}
            if kind.min_length:
                schema["minLength"] = kind.min_length
            return schema
        if isinstance(kind, BoolKind):
            return {"type": "boolean"}
        if isinstance(kind, IntKind):
            schema = {"type": "integer"}
            if kind.minimum is not None:
                schema["minimum"] = kind.minimum
            return schema
        if isinstance(kind, FloatKind):
            schema = {"type": "number"}
            if kind.minimum is not None:
                schema["minimum"] = kind.minimum
            if kind.maximum is not None:
                schema["maximum"] = kind.maximum
            return schema
        if isinstance(kind, EnumKind):
            if kind.values == tuple(member.value for member in kind.enum):
                return self.enum_def(kind.enum)
            return {"enum": list(kind.values), "type": "string"}
        if isinstance(kind, PassthroughKind):
            return {"anyOf": [self.enum_def(kind.enum), {"type": "string"}]}
        if isinstance(kind, DateTimeKind):
            return {"description": _DATETIME_DESCRIPTION, "type": "string"}
        if isinstance(kind, JsonObjectKind):
            return {"additionalProperties": True, "type": "object"}
        if isinstance(kind, NullKind):
            return {"description": f"Always null: {kind.reason}.", "type": "null"}
        if isinstance(kind, ListKind):
            return {"items": self.kind(kind.item), "type": "array"}
        if isinstance(kind, NullableKind):
            inner = self.kind(kind.inner)
            if "anyOf" in inner and len(inner) == 1:
                return {"anyOf": [*inner["anyOf"], {"type": "null"}]}
            return {"anyOf": [inner, {"type": "null"}]}
        self.model(kind.cls)
        return self.ref(kind.cls.__name__)

    def present(self, spec: ModelSpec, name: str) -> dict[str, Any]:
        """The schema of field ``name`` when it is non-null (and non-empty)."""
        kind = next(field.kind for field in spec.fields if field.name == name)
        if isinstance(kind, NullableKind):
            kind = kind.inner
        schema = self.kind(kind)
        if isinstance(kind, ListKind):
            schema = {"minItems": 1, "type": "array"}
        return {"properties": {name: schema}, "required": [name]}

    def model(self, cls: type) -> None:
        if cls.__name__ in self.defs:
            return
        spec = model_spec(cls)
        schema: dict[str, Any] = {
            "additionalProperties": True,
            "title": cls.__name__,
            "type": "object",
        }
        self.defs[cls.__name__] = schema
        properties: dict[str, Any] = {}
        for field in spec.fields:
            prop = self.kind(field.kind)
            if not field.required and field.default_factory is None:
                prop = {**prop, "default": _to_json(field.default)}
            properties[field.name] = prop
        schema["properties"] = properties
        required = [field.name for field in spec.fields if field.required]
        if required:
            schema["required"] = required
        if spec.description:
            schema["description"] = spec.description
        for rule in spec.rules:
            if isinstance(rule, AnyPresent):
                schema["anyOf"] = [self.present(spec, name) for name in rule.fields]
            elif isinstance(rule, Requires):
                schema["anyOf"] = [
                    {"properties": {rule.field: {"type": "null"}}},
                    self.present(spec, rule.required),
                ]


def build_json_schema(*, record_cls: type, version: str) -> dict[str, Any]:
    """The open Draft 2020-12 JSON Schema of one ``rampart.trace`` record."""
    builder = _SchemaBuilder()
    builder.model(Result)
    properties: dict[str, Any] = {
        "version": {"const": version, "type": "string"},
        "result": builder.ref(Result.__name__),
    }
    for name, kind in envelope_kinds(record_cls).items():
        inner = kind.inner if isinstance(kind, NullableKind) else kind
        prop = builder.kind(inner)
        prop["type"] = [prop["type"], "null"]
        properties[name] = prop
    major = version.rsplit(".", 1)[-1]
    return {
        "$defs": builder.defs,
        "$id": f"urn:rampart:trace:{major}",
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "additionalProperties": True,
        "description": _ROOT_DESCRIPTION,
        "properties": properties,
        "required": ["version", "result"],
        "title": record_cls.__name__,
        "type": "object",
    }
