"""The trace body codec as cattrs would generate it: for measuring, not for use.

``cattrs.gen.make_dict_structure_fn`` / ``make_dict_unstructure_fn`` build one function
per traced class from the same ``ModelSpec`` the compiled hooks use, with the policy
(exact JSON types, finite numbers, closed enums, ISO datetimes, JSON objects, lists of
models) as per-field ``override(struct_hook=..., unstruct_hook=...)`` hooks. Unknown
members are ignored (``forbid_extra_keys=False``, the contract's rule). What it leaves
out makes it a *lower bound* of a full cattrs codec: the cross-field rules, the
EvalResult normalisation on encode, the UTC-offset check and the path of a failure
(cattrs' detailed validation can give one; it is measured separately).

``bench_codec.py --cattrs`` times it against the compiled hooks (``rampart.codec._hooks``)
on the same record; the numbers are quoted in ``_hooks``' docstring.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from rampart.codec._schema import (
    TRACE_MODELS,
    BoolKind,
    DateTimeKind,
    EnumKind,
    FloatKind,
    IntKind,
    JsonObjectKind,
    Kind,
    ListKind,
    ModelKind,
    NullableKind,
    NullKind,
    PassthroughKind,
    StrKind,
    model_spec,
)

__all__ = ["make_body_converter"]


class PolicyError(ValueError):
    """A value the policy refuses (the prototype keeps no path)."""


def _structure_hook(kind: Kind, converter: cattrs.Converter) -> Any:
    """The decode-side policy hook ``(value, type) -> checked value`` of one field kind."""
    if isinstance(kind, StrKind | PassthroughKind):
        labels = (
            {member.value: member for member in kind.enum}
            if isinstance(kind, PassthroughKind)
            else None
        )

        def text(value: Any, _: Any) -> Any:
            if type(value) is not str:
                raise PolicyError("expected a string")
            return value if labels is None else labels.get(value, value)

        return text
    if isinstance(kind, BoolKind):

        def boolean(value: Any, _: Any) -> bool:
            if type(value) is not bool:
                raise PolicyError("expected a boolean")
            return value

        return boolean
    if isinstance(kind, IntKind):

        def integer(value: Any, _: Any) -> int:
            if type(value) is not int:
                raise PolicyError("expected an integer")
            return value

        return integer
    if isinstance(kind, FloatKind):

        def number(value: Any, _: Any) -> float:
            if type(value) is float:
                if value - value != 0.0:
                    raise PolicyError("expected a finite number")
                return value
            if type(value) is int:
                return float(value)
            raise PolicyError("expected a number")

        return number
    if isinstance(kind, EnumKind):
        members = {member.value: member for member in kind.enum if member.value in kind.values}

        def closed(value: Any, _: Any) -> Any:
            try:
                return members[value]
            except (KeyError, TypeError):
                raise PolicyError("expected a member") from None

        return closed
    if isinstance(kind, DateTimeKind):

        def timestamp(value: Any, _: Any) -> datetime:
            if type(value) is not str:
                raise PolicyError("expected a string")
            return datetime.fromisoformat(value)

        return timestamp
    if isinstance(kind, JsonObjectKind):

        def mapping(value: Any, _: Any) -> Any:
            if type(value) is not dict:
                raise PolicyError("expected an object")
            return value

        return mapping
    if isinstance(kind, NullKind):
        return lambda value, _: None
    if isinstance(kind, NullableKind):
        inner = _structure_hook(kind.inner, converter)
        return lambda value, _: None if value is None else inner(value, None)
    if isinstance(kind, ListKind):
        item = _structure_hook(kind.item, converter)

        def items(value: Any, _: Any) -> list[Any]:
            if type(value) is not list:
                raise PolicyError("expected an array")
            return [item(element, None) for element in value]

        return items
    assert isinstance(kind, ModelKind)
    return lambda value, _, cls=kind.cls: converter.structure(value, cls)


def _unstructure_hook(kind: Kind, converter: cattrs.Converter) -> Any:
    """The encode-side policy hook ``(value) -> JSON value`` of one field kind."""
    if isinstance(kind, StrKind | PassthroughKind):

        def text(value: Any) -> Any:
            if not isinstance(value, str):
                raise PolicyError("expected a string")
            return value

        return text
    if isinstance(kind, BoolKind | IntKind):
        return lambda value: value
    if isinstance(kind, FloatKind):

        def number(value: Any) -> float:
            if not math.isfinite(value):
                raise PolicyError("expected a finite number")
            return float(value)

        return number
    if isinstance(kind, EnumKind):
        return lambda value: value._value_
    if isinstance(kind, DateTimeKind):
        return lambda value: value.isoformat()
    if isinstance(kind, JsonObjectKind | NullKind):
        return lambda value: value
    if isinstance(kind, NullableKind):
        inner = _unstructure_hook(kind.inner, converter)
        return lambda value: None if value is None else inner(value)
    if isinstance(kind, ListKind):
        item = _unstructure_hook(kind.item, converter)
        return lambda value: [item(element) for element in value]
    assert isinstance(kind, ModelKind)
    return lambda value: converter.unstructure(value)


def make_body_converter(*, detailed_validation: bool = False) -> cattrs.Converter:
    """A converter whose traced-class hooks are generated by ``cattrs.gen``."""
    converter = cattrs.Converter(detailed_validation=detailed_validation)
    for cls in TRACE_MODELS:
        spec = model_spec(cls)
        structure = {
            field.name: override(struct_hook=_structure_hook(field.kind, converter))
            for field in spec.fields
        }
        unstructure = {
            field.name: override(unstruct_hook=_unstructure_hook(field.kind, converter))
            for field in spec.fields
        }
        converter.register_structure_hook(
            cls,
            make_dict_structure_fn(cls, converter, _cattrs_forbid_extra_keys=False, **structure),
        )
        converter.register_unstructure_hook(
            cls, make_dict_unstructure_fn(cls, converter, **unstructure)
        )
    return converter
