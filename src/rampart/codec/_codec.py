"""The strict-domain policy layer: compiled encode/decode hooks and JSON text handling.

:func:`compile_decoder` and :func:`compile_encoder` turn a :class:`~._schema.ModelSpec`
into one straight-line Python function per class (the way attrs and cattrs generate
``__init__`` and structuring code), so a record is checked in a single walk with no
per-field dispatch. The rules they enforce are the decoder rules of the trace contract:

* no str/bool/int coercion: a boolean is not an integer, ``"1"`` is not ``1``; an
  integer is accepted where a float is expected (as in JSON) and becomes a float;
* integer fields use integer notation (the parsed type is checked, so ``0.0`` fails);
* numbers are finite (enforced while parsing and again on every float field);
* timestamps go through ``datetime.isoformat`` / ``datetime.fromisoformat``;
* closed enums fail closed; the passthrough label (``HarmCategory``) is any string;
* missing fields take their defaults, ``null`` is accepted only on nullable fields;
* unknown members are ignored, at every level;
* free-form mappings hold JSON values only (checked on encode; the parser guarantees
  it on decode);
* strings and keys are Unicode scalar values. This is checked once over the JSON text
  (one C-speed pass); only when it fails is the document walked to find the path.

Failures raise :class:`PathError`, whose message is built only when it is read: the
failing path (``$.result.turns[2].turn_number``) and what was expected, never the
offending value or a producer-chosen mapping key.
"""

from __future__ import annotations

import json
import linecache
import math
import re
import typing
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import attrs

from rampart.codec._schema import (
    TRACE_MODELS,
    AnyPresent,
    DateTimeKind,
    EnumKind,
    FloatKind,
    IntKind,
    JsonObjectKind,
    Kind,
    LessThan,
    ListKind,
    ModelKind,
    ModelSpec,
    NullableKind,
    NullKind,
    PassthroughKind,
    Requires,
    StrKind,
    model_spec,
)
from rampart.core.errors import SchemaError, UnsupportedSchemaVersionError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    import cattrs

__all__ = [
    "NO_VALUE",
    "PathError",
    "check_json_mapping",
    "check_version",
    "compile_decoder",
    "compile_encoder",
    "configure_converter",
    "dump_json",
    "find_surrogate",
    "make_converter",
    "may_hold_surrogates",
    "nested_models",
    "parse_json",
    "text_has_surrogates",
]

# --------------------------------------------------------------------------- errors

NO_VALUE: Final = object()

_JSON_TYPE_NAMES: Final = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


class _Position:
    """A path segment that names a position, never a producer-chosen key."""

    __slots__ = ("label", "position")

    def __init__(self, label: str, position: int) -> None:
        self.label = label
        self.position = position

    def __str__(self) -> str:
        return f"[<{self.label} #{self.position}>]"


def _key_segment(mapping: dict[Any, Any], key: object) -> _Position:
    position = next(index for index, candidate in enumerate(mapping) if candidate is key)
    return _Position("key", position)


class PathError(SchemaError):
    """A rule violation at a JSON path; the message is rendered on demand.

    ``segments`` holds the path innermost-first, so each enclosing hook appends its own
    segment while the exception unwinds; nothing path-related is built on success.
    """

    def __init__(self, problem: str, got: object = NO_VALUE, *segments: object) -> None:
        super().__init__()
        self.problem = problem
        self.got = None if got is NO_VALUE else _describe_type(got)
        self.segments: list[object] = list(segments)

    def render(self, root: str = "$") -> str:
        parts = [root]
        for segment in reversed(self.segments):
            if isinstance(segment, str):
                parts.append(f".{segment}")
            elif isinstance(segment, int):
                parts.append(f"[{segment}]")
            else:
                parts.append(str(segment))
        message = f"{''.join(parts)}: {self.problem}"
        return message if self.got is None else f"{message}, got {self.got}"

    def __str__(self) -> str:
        return self.render()

    def __reduce__(self) -> tuple[Any, ...]:
        return (SchemaError, (self.render(),))


def _describe_type(value: object) -> str:
    kind = type(value)
    return _JSON_TYPE_NAMES.get(kind) or kind.__name__


def _err(problem: str, got: object = NO_VALUE, *segments: object) -> PathError:
    return PathError(problem, got, *segments)


def _missing(name: str) -> PathError:
    return PathError("required field is missing", NO_VALUE, name)


def _item_err(problem: str, items: list[Any], item: object, name: str) -> PathError:
    index = next(position for position, candidate in enumerate(items) if candidate is item)
    return PathError(problem, item, index, name)


def _relocate(items: Iterable[Any], hook: Callable[[Any], Any], name: str) -> PathError:
    """Re-run ``hook`` over ``items`` to attach the index of the first failing item."""
    for index, item in enumerate(items):
        try:
            hook(item)
        except PathError as exc:
            exc.segments.extend((index, name))
            return exc
    return PathError("expected valid elements", NO_VALUE, name)  # pragma: no cover


# --------------------------------------------------------------------------- messages


def _expected(kind: Kind, *, encode: bool) -> str:
    """What a value of ``kind`` must be, phrased for the message (never the value)."""
    if isinstance(kind, StrKind):
        return "a non-empty string" if kind.min_length else "a string"
    if isinstance(kind, IntKind):
        bound = "" if kind.minimum is None else f" >= {kind.minimum}"
        return f"an integer{bound}" if encode else f"an integer{bound} in integer notation"
    if isinstance(kind, FloatKind):
        if kind.minimum is not None and kind.maximum is not None:
            return f"a finite number from {kind.minimum} to {kind.maximum}"
        return "a finite number"
    if isinstance(kind, EnumKind):
        if encode:
            return f"a {kind.enum.__name__} member"
        return _allowed_values(kind)
    if isinstance(kind, PassthroughKind):
        return "a string"
    if isinstance(kind, DateTimeKind):
        if encode:
            return "a datetime"
        return "an ISO 8601 datetime string accepted by datetime.fromisoformat()"
    if isinstance(kind, JsonObjectKind):
        return "a dict" if encode else "an object"
    if isinstance(kind, NullKind):
        return f"null ({kind.reason})"
    if isinstance(kind, ListKind):
        return "a list" if encode else "an array"
    if isinstance(kind, NullableKind):
        return f"{_expected(kind.inner, encode=encode)} or null"
    return f"a {kind.cls.__name__} instance" if encode else "an object"


def _allowed_values(kind: EnumKind) -> str:
    allowed = ", ".join(repr(value) for value in kind.values)
    return f"one of {allowed}" + (f" ({kind.note})" if kind.note else "")


# --------------------------------------------------------------------------- codegen


class _Gen:
    """Collects the source and namespace of one generated hook."""

    def __init__(self, spec: ModelSpec, *, encode: bool) -> None:
        self.spec = spec
        self.encode = encode
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {
            "PathError": PathError,
            "_err": _err,
            "_missing": _missing,
            "_item_err": _item_err,
            "_relocate": _relocate,
            "_MISSING": NO_VALUE,
            "_datetime": datetime,
            "_fromiso": datetime.fromisoformat,
            "_enc_int": _enc_int,
            "_enc_float": _enc_float,
            "_float_from_int": _float_from_int,
            "_check_json_mapping": check_json_mapping,
            "_check_offset": _check_offset,
        }
        self._counter = 0

    def const(self, value: Any, prefix: str = "K") -> str:
        self._counter += 1
        name = f"{prefix}{self._counter}"
        self.namespace[name] = value
        return name

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def source(self) -> str:
        return "\n".join(self.lines) + "\n"


def nested_models(spec: ModelSpec) -> set[type]:
    """The traced classes ``spec`` refers to directly."""
    found: set[type] = set()

    def visit(kind: Kind) -> None:
        if isinstance(kind, ModelKind):
            found.add(kind.cls)
        elif isinstance(kind, ListKind):
            visit(kind.item)
        elif isinstance(kind, NullableKind):
            visit(kind.inner)

    for field in spec.fields:
        visit(field.kind)
    return found


def _hook_name(cls: type) -> str:
    return f"hook_{cls.__name__}"


def _emit_value(gen: _Gen, kind: Kind, src: str, dst: str, seg: str, ind: int) -> None:
    """Emit code that checks ``src`` against ``kind`` and leaves the result in ``dst``.

    ``seg`` is the source of the path segment(s) to attach on failure (``'name'`` or
    ``i, 'name'``). Nullable wrappers keep their inner checks but widen the message.
    """
    _emit_kind(gen, kind, src, dst, seg, ind, _expected(kind, encode=gen.encode))


def _emit_kind(
    gen: _Gen, kind: Kind, src: str, dst: str, seg: str, ind: int, expected: str
) -> None:
    exp = gen.const(f"expected {expected}", "E")
    enc = gen.encode
    if isinstance(kind, NullableKind):
        gen.emit(ind, f"if {src} is None:")
        gen.emit(ind + 1, f"{dst} = None")
        gen.emit(ind, "else:")
        if isinstance(kind.inner, ModelKind):
            # The nested hook's own type check cannot know that null was an option.
            if enc:
                gen.namespace[f"_cls_{kind.inner.cls.__name__}"] = kind.inner.cls
                gen.emit(ind + 1, f"if not isinstance({src}, _cls_{kind.inner.cls.__name__}):")
            else:
                gen.emit(ind + 1, f"if type({src}) is not dict:")
            gen.emit(ind + 2, f"raise _err({exp}, {src}, {seg})")
        _emit_kind(gen, kind.inner, src, dst, seg, ind + 1, expected)
        return
    if isinstance(kind, StrKind | PassthroughKind):
        check = f"type({src}) is not str" + (f" and not isinstance({src}, str)" if enc else "")
        gen.emit(ind, f"if {check}:")
        gen.emit(ind + 1, f"raise _err({exp}, {src}, {seg})")
        if isinstance(kind, StrKind) and kind.min_length:
            gen.emit(ind, f"if len({src}) < {kind.min_length}:")
            gen.emit(ind + 1, f"raise _err({exp}, _MISSING, {seg})")
        if isinstance(kind, PassthroughKind) and not enc:
            labels = gen.const({member.value: member for member in kind.enum}, "L")
            gen.emit(ind, f"{dst} = {labels}.get({src}, {src})")
        else:
            gen.emit(ind, f"{dst} = {src}")
        return
    if isinstance(kind, IntKind):
        gen.emit(ind, f"if type({src}) is not int:")
        if enc:
            gen.emit(ind + 1, f"{src} = _enc_int({src}, {exp}, {seg})")
        else:
            gen.emit(ind + 1, f"raise _err({exp}, {src}, {seg})")
        if kind.minimum is not None:
            gen.emit(ind, f"if {src} < {kind.minimum!r}:")
            gen.emit(ind + 1, f"raise _err({exp}, _MISSING, {seg})")
        gen.emit(ind, f"{dst} = {src}")
        return
    if isinstance(kind, FloatKind):
        if enc:
            gen.emit(ind, f"if type({src}) is not float or {src} - {src} != 0.0:")
            gen.emit(ind + 1, f"{src} = _enc_float({src}, {exp}, {seg})")
        else:
            gen.emit(ind, f"if type({src}) is float:")
            gen.emit(ind + 1, f"if {src} - {src} != 0.0:")
            gen.emit(ind + 2, f"raise _err({exp}, _MISSING, {seg})")
            gen.emit(ind, f"elif type({src}) is int:")
            gen.emit(ind + 1, f"{src} = _float_from_int({src}, {exp}, {seg})")
            gen.emit(ind, "else:")
            gen.emit(ind + 1, f"raise _err({exp}, {src}, {seg})")
        if kind.minimum is not None or kind.maximum is not None:
            low = "-_inf" if kind.minimum is None else repr(kind.minimum)
            high = "_inf" if kind.maximum is None else repr(kind.maximum)
            gen.namespace["_inf"] = math.inf
            gen.emit(ind, f"if not {low} <= {src} <= {high}:")
            gen.emit(ind + 1, f"raise _err({exp}, _MISSING, {seg})")
        gen.emit(ind, f"{dst} = {src}")
        return
    if isinstance(kind, EnumKind):
        restricted = kind.values != tuple(member.value for member in kind.enum)
        if enc:
            enum_cls = gen.const(kind.enum, "C")
            gen.emit(ind, f"if type({src}) is not {enum_cls}:")
            gen.emit(ind + 1, f"raise _err({exp}, {src}, {seg})")
            gen.emit(ind, f"{dst} = {src}._value_")
            if restricted:
                allowed = gen.const(frozenset(kind.values), "A")
                listed = _allowed_values(kind).removeprefix("one of ")
                problem = gen.const(f"expected a {kind.enum.__name__} among {listed}", "E")
                gen.emit(ind, f"if {dst} not in {allowed}:")
                gen.emit(ind + 1, f"raise _err({problem}, _MISSING, {seg})")
        else:
            members = {member.value: member for member in kind.enum if member.value in kind.values}
            lookup = gen.const(members, "L")
            # Keys are str, so a non-str value misses (or is unhashable): fail closed.
            gen.emit(ind, "try:")
            gen.emit(ind + 1, f"{dst} = {lookup}[{src}]")
            gen.emit(ind, "except (KeyError, TypeError):")
            gen.emit(ind + 1, f"raise _err({exp}, {src}, {seg}) from None")
        return
    if isinstance(kind, DateTimeKind):
        if enc:
            gen.emit(ind, f"if not isinstance({src}, _datetime):")
            gen.emit(ind + 1, f"raise _err({exp}, {src}, {seg})")
            gen.emit(ind, f"{dst} = {src}.isoformat()")
            gen.emit(ind, f"if {dst}[-16] in '+-':")
            gen.emit(ind + 1, f"_check_offset({dst}, {seg})")
        else:
            gen.emit(ind, f"if type({src}) is not str:")
            gen.emit(ind + 1, f"raise _err({exp}, {src}, {seg})")
            gen.emit(ind, "try:")
            gen.emit(ind + 1, f"{dst} = _fromiso({src})")
            gen.emit(ind, "except ValueError:")
            gen.emit(ind + 1, f"raise _err({exp}, _MISSING, {seg}) from None")
        return
    if isinstance(kind, JsonObjectKind):
        check = f"type({src}) is not dict" + (f" and not isinstance({src}, dict)" if enc else "")
        gen.emit(ind, f"if {check}:")
        gen.emit(ind + 1, f"raise _err({exp}, {src}, {seg})")
        if enc:
            gen.emit(ind, "try:")
            gen.emit(ind + 1, f"_check_json_mapping({src})")
            gen.emit(ind, "except PathError as exc:")
            gen.emit(ind + 1, f"exc.segments.extend(({seg},))")
            gen.emit(ind + 1, "raise")
        gen.emit(ind, f"{dst} = {src}")
        return
    if isinstance(kind, NullKind):
        gen.emit(ind, f"if {src} is not None:")
        gen.emit(ind + 1, f"raise _err({exp}, _MISSING, {seg})")
        gen.emit(ind, f"{dst} = None")
        return
    if isinstance(kind, ListKind):
        check = f"type({src}) is not list" + (f" and not isinstance({src}, list)" if enc else "")
        gen.emit(ind, f"if {check}:")
        gen.emit(ind + 1, f"raise _err({exp}, {src}, {seg})")
        item = kind.item
        if isinstance(item, ModelKind):
            hook = _hook_name(item.cls)
            gen.emit(ind, "try:")
            gen.emit(ind + 1, f"{dst} = [{hook}(x) for x in {src}]")
            gen.emit(ind, "except PathError:")
            gen.emit(ind + 1, f"raise _relocate({src}, {hook}, {seg}) from None")
        elif isinstance(item, StrKind) and not item.min_length:
            item_exp = gen.const(f"expected {_expected(item, encode=enc)}", "E")
            check = "type(x) is not str" + (" and not isinstance(x, str)" if enc else "")
            gen.emit(ind, f"for x in {src}:")
            gen.emit(ind + 1, f"if {check}:")
            gen.emit(ind + 2, f"raise _item_err({item_exp}, {src}, x, {seg})")
            gen.emit(ind, f"{dst} = {src}")
        else:
            gen.emit(ind, f"{dst} = []")
            gen.emit(ind, f"for i, x in enumerate({src}):")
            _emit_value(gen, item, "x", "y", f"i, {seg}", ind + 1)
            gen.emit(ind + 1, f"{dst}.append(y)")
        return
    hook = _hook_name(kind.cls)
    gen.emit(ind, "try:")
    gen.emit(ind + 1, f"{dst} = {hook}({src})")
    gen.emit(ind, "except PathError as exc:")
    gen.emit(ind + 1, f"exc.segments.extend(({seg},))")
    gen.emit(ind + 1, "raise")


def _emit_rules(gen: _Gen, variables: dict[str, str], ind: int) -> None:
    spec = gen.spec
    kinds = {field.name: field.kind for field in spec.fields}
    for rule in spec.rules:
        exp = gen.const(f"expected {rule.expected}", "E")
        if isinstance(rule, AnyPresent):
            absent = []
            for name in rule.fields:
                kind = kinds[name]
                var = variables[name]
                absent.append(f"not {var}" if isinstance(kind, ListKind) else f"{var} is None")
            gen.emit(ind, f"if {' and '.join(absent)}:")
            gen.emit(ind + 1, f"raise _err({exp})")
        elif isinstance(rule, Requires):
            field, required = variables[rule.field], variables[rule.required]
            gen.emit(ind, f"if {field} is not None and {required} is None:")
            gen.emit(ind + 1, f"raise _err({exp}, _MISSING, {rule.required!r})")
        elif isinstance(rule, LessThan):
            field, bound = variables[rule.field], variables[rule.bound]
            gen.emit(ind, f"if {field} >= {bound}:")
            gen.emit(ind + 1, f"raise _err({exp}, _MISSING, {rule.field!r})")


def _compile(gen: _Gen, function_name: str) -> Callable[..., Any]:
    source = gen.source()
    filename = f"<rampart.trace generated {function_name}>"
    # Our own generated source, as attrs and cattrs do; linecache makes tracebacks readable.
    exec(compile(source, filename, "exec"), gen.namespace)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    function: Callable[..., Any] = gen.namespace[function_name]
    return function


def _object_problem(cls: type, *, encode: bool) -> str:
    return f"expected a {cls.__name__} instance" if encode else "expected an object"


def compile_decoder(spec: ModelSpec, hooks: dict[type, Callable[..., Any]]) -> Callable[..., Any]:
    """A structure hook ``(data, _type=None) -> instance`` for parsed JSON of ``spec``."""
    gen = _Gen(spec, encode=False)
    cls = spec.cls
    for nested, hook in hooks.items():
        gen.namespace[_hook_name(nested)] = hook
    gen.namespace["_cls"] = cls
    name = f"decode_{cls.__name__}"
    not_object = gen.const(_object_problem(cls, encode=False), "E")
    gen.emit(0, f"def {name}(d, _type=None):")
    gen.emit(1, "if type(d) is not dict:")
    gen.emit(2, f"raise _err({not_object}, d)")
    variables: dict[str, str] = {}
    for index, field in enumerate(spec.fields):
        var = f"f{index}"
        variables[field.name] = var
        key = repr(field.name)
        # A subscript in a try block costs nothing when the key is present (the writer
        # always writes every field); only an omitted field pays for the exception.
        gen.emit(1, "try:")
        gen.emit(2, f"v = d[{key}]")
        gen.emit(1, "except KeyError:")
        if field.required:
            gen.emit(2, f"raise _missing({key}) from None")
        elif field.default_factory is list:
            gen.emit(2, f"{var} = []")
        elif field.default_factory is dict:
            gen.emit(2, f"{var} = {{}}")
        else:
            gen.emit(2, f"{var} = {gen.const(field.default, 'D')}")
        gen.emit(1, "else:")
        _emit_value(gen, field.kind, "v", var, key, 2)
    _emit_rules(gen, variables, 1)
    arguments = ", ".join(f"{field.name}={variables[field.name]}" for field in spec.fields)
    rejected = gen.const(f"expected a value the {cls.__name__} constructor accepts", "E")
    gen.emit(1, "try:")
    gen.emit(2, f"return _cls({arguments})")
    gen.emit(1, "except (TypeError, ValueError):")
    gen.emit(2, f"raise _err({rejected}) from None")
    return _compile(gen, name)


def compile_encoder(spec: ModelSpec, hooks: dict[type, Callable[..., Any]]) -> Callable[..., Any]:
    """An unstructure hook ``(instance) -> dict`` that validates the live value."""
    gen = _Gen(spec, encode=True)
    cls = spec.cls
    for nested, hook in hooks.items():
        gen.namespace[_hook_name(nested)] = hook
    gen.namespace["_cls"] = cls
    name = f"encode_{cls.__name__}"
    not_instance = gen.const(_object_problem(cls, encode=True), "E")
    gen.emit(0, f"def {name}(o):")
    gen.emit(1, "if type(o) is not _cls and not isinstance(o, _cls):")
    gen.emit(2, f"raise _err({not_instance}, o)")
    variables: dict[str, str] = {}
    for index, field in enumerate(spec.fields):
        var = f"f{index}"
        variables[field.name] = var
        gen.emit(1, f"v = o.{field.name}")
        _emit_value(gen, field.kind, "v", var, repr(field.name), 1)
    _emit_rules(gen, variables, 1)
    items = ", ".join(f"{field.name!r}: {variables[field.name]}" for field in spec.fields)
    gen.emit(1, f"return {{{items}}}")
    return _compile(gen, name)


# --------------------------------------------------------------------------- encode helpers


def _enc_int(value: object, expected: str, *segments: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PathError(expected, value, *segments)
    return value


def _float_from_int(value: int, expected: str, *segments: object) -> float:
    try:
        return float(value)
    except OverflowError:
        raise PathError(expected, NO_VALUE, *segments) from None


def _enc_float(value: object, expected: str, *segments: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PathError(expected, value, *segments)
    number = _float_from_int(value, expected, *segments) if isinstance(value, int) else value
    if not math.isfinite(number):
        raise PathError(expected, NO_VALUE, *segments)
    return float(number)


def _check_offset(text: str, *segments: object) -> None:
    """Reject a UTC offset under one second: ``fromisoformat`` would read it as UTC.

    ``isoformat()`` ends in ``+HH:MM:SS.ffffff`` only when the offset has microseconds;
    CPython 3.11 parses ``+00:00:00.ffffff`` as a zero offset, so such a value could
    not come back equal.
    """
    if text[-15:-7] == "00:00:00":
        raise PathError(
            "expected a datetime whose UTC offset is zero or at least one second "
            "(datetime.fromisoformat reads a sub-second offset as UTC)",
            NO_VALUE,
            *segments,
        )


_JSON_LEAVES: Final = frozenset({str, int, bool, type(None)})
_JSON_VALUE = (
    "expected a JSON value (null, string, boolean, finite number, list or string-keyed dict)"
)
_CYCLE = "expected a JSON value without cycles (this container contains itself)"


def check_json_mapping(mapping: dict[Any, Any]) -> None:
    """Reject anything in a free-form mapping that is not a JSON value; never coerce."""
    _check_mapping(mapping, set())


def _check_mapping(mapping: dict[Any, Any], active: set[int]) -> None:
    marker = id(mapping)
    if marker in active:
        raise PathError(_CYCLE)
    active.add(marker)
    for key, value in mapping.items():
        if type(key) is not str and not isinstance(key, str):
            raise PathError("expected string keys", key, _key_segment(mapping, key))
        if type(value) in _JSON_LEAVES:
            continue
        try:
            _check_value(value, active)
        except PathError as exc:
            exc.segments.append(_key_segment(mapping, key))
            raise
    active.discard(marker)


def _check_list(items: list[Any], active: set[int]) -> None:
    marker = id(items)
    if marker in active:
        raise PathError(_CYCLE)
    active.add(marker)
    for index, value in enumerate(items):
        if type(value) in _JSON_LEAVES:
            continue
        try:
            _check_value(value, active)
        except PathError as exc:
            exc.segments.append(index)
            raise
    active.discard(marker)


def _check_value(value: object, active: set[int]) -> None:
    if type(value) is float:
        if value - value != 0.0:
            raise PathError("expected a finite number")
    elif isinstance(value, dict):
        _check_mapping(value, active)
    elif isinstance(value, list):
        _check_list(value, active)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise PathError("expected a finite number")
    elif not isinstance(value, str | int):
        raise PathError(_JSON_VALUE, value)


# --------------------------------------------------------------------------- JSON text


class _NonFiniteNumber(Exception):
    """Raised from the parser hooks; turned into a SchemaError by :func:`parse_json`."""


def _reject_constant(name: str) -> Any:
    raise _NonFiniteNumber


def _parse_float(text: str) -> float:
    value = float(text)
    if value - value != 0.0:  # 1e999 overflows to inf
        raise _NonFiniteNumber
    return value


_DECODER: Final = json.JSONDecoder(parse_float=_parse_float, parse_constant=_reject_constant)
_ENCODER: Final = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, check_circular=False, separators=(",", ":")
)


def parse_json(data: str) -> Any:
    """Parse JSON text; NaN/Infinity constants and overflowing numbers are rejected."""
    try:
        return _DECODER.decode(data)
    except _NonFiniteNumber:
        raise SchemaError(
            "$: expected finite JSON numbers (NaN, Infinity and numbers that overflow "
            "a float are not accepted)"
        ) from None
    except json.JSONDecodeError as exc:
        raise SchemaError(
            f"$: expected JSON text ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise SchemaError("$: JSON nesting is too deep to decode") from None
    except ValueError:  # e.g. an integer beyond the interpreter's digit limit
        raise SchemaError("$: expected JSON numbers this reader can represent") from None


def dump_json(document: Any) -> str:
    """Compact JSON text, written as-is (``ensure_ascii=False``); values were checked."""
    return _ENCODER.encode(document)


# --------------------------------------------------------------------------- surrogates

_SCALAR_STRING = "expected a string of Unicode scalar values (lone surrogates are not allowed)"
_SCALAR_KEY = "expected keys of Unicode scalar values (lone surrogates are not allowed)"


def text_has_surrogates(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (one C-speed pass)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


def may_hold_surrogates(data: str) -> bool:
    """Whether JSON text could decode to a string holding a surrogate code point.

    Most records hold no backslash at all, which one ``memchr`` pass proves. False
    positives (an escaped backslash before ``ud800``, a valid surrogate pair) only cost
    a walk of the parsed document.
    """
    if text_has_surrogates(data):
        return True
    return data.find("\\") != -1 and _SURROGATE_ESCAPE.search(data) is not None


def find_surrogate(document: dict[str, Any], fields: dict[str, Kind]) -> PathError | None:
    """The path of the first string or key in ``document`` holding a surrogate.

    ``fields`` are the envelope's member kinds; the walk follows the specs so that
    schema fields are named and every other key is reported by position only.
    """
    try:
        _scan_members(document, fields)
    except PathError as exc:
        return exc
    return None


def _scan_members(mapping: dict[str, Any], fields: dict[str, Kind] | None) -> None:
    for position, (key, value) in enumerate(mapping.items()):
        kind = fields.get(key) if fields is not None and isinstance(key, str) else None
        segment: object = (
            key
            if kind is not None
            else _Position("key" if fields is None else "unrecognized member", position)
        )
        if isinstance(key, str) and text_has_surrogates(key):
            raise PathError(_SCALAR_KEY, NO_VALUE, segment)
        try:
            _scan(value, kind)
        except PathError as exc:
            exc.segments.append(segment)
            raise


def _scan(value: object, kind: Kind | None) -> None:
    while isinstance(kind, NullableKind):
        kind = kind.inner
    if isinstance(value, str):
        if text_has_surrogates(value):
            raise PathError(_SCALAR_STRING)
    elif isinstance(value, dict):
        if isinstance(kind, ModelKind):
            spec = model_spec(kind.cls)
            _scan_members(value, {field.name: field.kind for field in spec.fields})
        else:
            _scan_members(value, None)
    elif isinstance(value, list):
        item = kind.item if isinstance(kind, ListKind) else None
        for index, element in enumerate(value):
            try:
                _scan(element, item)
            except PathError as exc:
                exc.segments.append(index)
                raise


# --------------------------------------------------------------------------- converter

_NODEID_PROBLEM = "expected a str of Unicode scalar values or None"
_INDEX_PROBLEM = "expected an int >= 0 (not a bool) or None"


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
      ``UnsupportedSchemaVersionError`` before anything else is read.
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
      Integer fields take ints in integer notation, never booleans or ``0.0``.
    * Free-form mappings (``metadata``, ``arguments``, ``details``) hold JSON values
      only: ``None``, ``str``, ``bool``, ``int``, finite ``float``, ``list`` and
      ``dict`` with ``str`` keys (subclasses included, written as their JSON value).
      Tuples, sets, bytes, cycles, non-str keys and other objects are rejected, never
      coerced; keys are never filtered.
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

    The structure hooks consume output of :func:`parse_json` (finite numbers) after the
    surrogate scan; ``deserialize_record`` runs all three, so use it rather than
    structuring by hand.
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
        _record_decoder(record_cls, version, converter.get_structure_hook(result_cls)),
    )
    converter.register_unstructure_hook(
        record_cls,
        _record_encoder(record_cls, version, converter.get_unstructure_hook(result_cls)),
    )


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


def _record_decoder(
    record_cls: type, version: str, decode_result: Callable[..., Any]
) -> Callable[..., Any]:
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
        if nodeid is not None and type(nodeid) is not str:
            raise PathError("expected a string or null", nodeid, "pytest_nodeid")
        index = document.get("result_index")
        if index is not None and (type(index) is not int or index < 0):
            raise PathError(
                "expected an integer >= 0 in integer notation or null",
                index if type(index) is not int else NO_VALUE,
                "result_index",
            )
        return record_cls(result=result, pytest_nodeid=nodeid, result_index=index)

    return decode_record


def _record_encoder(
    record_cls: type, version: str, encode_result: Callable[..., Any]
) -> Callable[[Any], dict[str, Any]]:
    def encode_record(record: Any) -> dict[str, Any]:
        if not isinstance(record, record_cls):
            raise PathError(f"expected a {record_cls.__name__}", record)
        record = typing.cast("Any", record)
        try:
            body = encode_result(record.result)
        except PathError as exc:
            exc.segments.append("result")
            raise
        document = {"version": version, "result": body}
        nodeid = record.pytest_nodeid
        if nodeid is not None:
            if not isinstance(nodeid, str):
                raise PathError(_NODEID_PROBLEM, nodeid, "pytest_nodeid")
            document["pytest_nodeid"] = nodeid
        index = record.result_index
        if index is not None:
            if type(index) is not int or index < 0:
                raise PathError(_INDEX_PROBLEM, index, "result_index")
            document["result_index"] = index
        return document

    return encode_record
