"""The encode/decode hooks, compiled from the specs: one straight-line function per class.

:func:`compile_decoder` and :func:`compile_encoder` turn a :class:`~._schema.ModelSpec`
into Python source and compile it (the way attrs and cattrs generate ``__init__`` and
structuring code), so a record is checked in a single walk with no per-field dispatch.
Each field kind has one emitter (``_emit_str``, ``_emit_float``, ...) that writes the
check for that kind; a :class:`_HookSource` collects the lines and the constants the
generated code refers to. The rules the emitters enforce are the decoder rules of the
trace contract (listed in :func:`rampart.codec._converter.configure_converter`):

* no str/bool/int coercion: a boolean is not an integer, ``"1"`` is not ``1``; an
  integer is accepted where a float is expected (as in JSON) and becomes a float;
* integer fields use integer notation (the parsed type is checked, so ``0.0`` fails);
* numbers are finite (the parser rejects non-finite ones; every float field checks
  again, and so does the encoder for live values);
* timestamps go through ``datetime.isoformat`` / ``datetime.fromisoformat``;
* closed enums fail closed; the passthrough label (``HarmCategory``) is any string;
* missing fields take their defaults, ``null`` is accepted only on nullable fields;
* unknown members are ignored, at every level;
* free-form mappings hold JSON values only (checked on encode; the parser guarantees it
  on decode).

Generated code reads and writes only its own variables: ``value`` (the field being
checked), ``field_<name>`` (its checked result) and numbered ``item_<n>`` / ``index_<n>``
loop variables. Failures raise :class:`~._paths.PathError`.
"""

from __future__ import annotations

import contextlib
import linecache
import math
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs

from rampart.codec._json import check_json_mapping
from rampart.codec._paths import NO_VALUE, PathError, item_error, missing_field, relocate
from rampart.codec._schema import (
    AnyPresent,
    BoolKind,
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
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["compile_decoder", "compile_encoder", "expected", "nested_models"]


# --------------------------------------------------------------------------- messages


def expected(kind: Kind, *, encode: bool) -> str:
    """What a value of ``kind`` must be, phrased for the message (never the value)."""
    if isinstance(kind, StrKind):
        return "a non-empty string" if kind.min_length else "a string"
    if isinstance(kind, BoolKind):
        return "a boolean"
    if isinstance(kind, IntKind):
        bound = "" if kind.minimum is None else f" >= {kind.minimum}"
        return f"an integer{bound}" if encode else f"an integer{bound} in integer notation"
    if isinstance(kind, FloatKind):
        if kind.minimum is not None and kind.maximum is not None:
            return f"a finite number from {kind.minimum} to {kind.maximum}"
        if kind.minimum is not None:
            return f"a finite number >= {kind.minimum}"
        return "a finite number"
    if isinstance(kind, EnumKind):
        return f"a {kind.enum.__name__} member" if encode else _allowed_values(kind)
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
        return f"{expected(kind.inner, encode=encode)} or null"
    return f"a {kind.cls.__name__} instance" if encode else "an object"


def _allowed_values(kind: EnumKind) -> str:
    allowed = ", ".join(repr(value) for value in kind.values)
    return f"one of {allowed}" + (f" ({kind.note})" if kind.note else "")


# --------------------------------------------------------------------------- runtime helpers


def _int_to_encode(value: object, message: str, *segments: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PathError(message, value, *segments)
    return value


def _float_from_int(value: int, message: str, *segments: object) -> float:
    try:
        return float(value)
    except OverflowError:
        raise PathError(message, NO_VALUE, *segments) from None


def _float_to_encode(value: object, message: str, *segments: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PathError(message, value, *segments)
    number = _float_from_int(value, message, *segments) if isinstance(value, int) else value
    if not math.isfinite(number):
        raise PathError(message, NO_VALUE, *segments)
    return float(number)


def _finite_or(value: object, stand_in: float, message: str, *segments: object) -> float:
    """``_float_to_encode``, except that a NaN or infinite float becomes ``stand_in``."""
    if isinstance(value, float) and not math.isfinite(value):
        return stand_in
    return _float_to_encode(value, message, *segments)


def _check_utc_offset(text: str, *segments: object) -> None:
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


_RUNTIME: dict[str, Any] = {
    "PathError": PathError,
    "_error": PathError,
    "_NO_VALUE": NO_VALUE,
    "_missing_field": missing_field,
    "_item_error": item_error,
    "_relocate": relocate,
    "_datetime": datetime,
    "_fromisoformat": datetime.fromisoformat,
    "_int_to_encode": _int_to_encode,
    "_float_to_encode": _float_to_encode,
    "_finite_or": _finite_or,
    "_float_from_int": _float_from_int,
    "_check_json_mapping": check_json_mapping,
    "_check_utc_offset": _check_utc_offset,
}


# --------------------------------------------------------------------------- the generator


@attrs.frozen
class _Site:
    """One value under check: where it is read, where its result goes, and its path.

    ``path`` is Python source for the path segments to attach on failure (``'name'`` or
    ``index_1, 'name'``); ``message`` names the constant holding "expected ...".
    """

    value: str
    target: str
    path: str
    message: str


class _HookSource:
    """The source lines and namespace of one generated hook."""

    def __init__(self, *, encode: bool, nested: dict[type, Callable[..., Any]]) -> None:
        self.encode = encode
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = dict(_RUNTIME)
        self.namespace.update({hook_name(cls): hook for cls, hook in nested.items()})
        self._depth = 0
        self._count = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self._depth + text)

    @contextlib.contextmanager
    def block(self, header: str) -> Iterator[None]:
        """Write ``header`` and indent what is written inside the ``with``."""
        self.line(header)
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    def constant(self, value: Any, hint: str) -> str:
        """A fresh global of the generated code holding ``value``; returns its name."""
        name = self.variable(f"_{hint}")
        self.namespace[name] = value
        return name

    def variable(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def message(self, text: str) -> str:
        return self.constant(text, "expected")

    def fail(self, site: _Site, *, got: str = "_NO_VALUE", suffix: str = "") -> None:
        """Raise the site's error; ``got`` is the source of the value whose type to name."""
        self.line(f"raise _error({site.message}, {got}, {site.path}){suffix}")

    def site(self, kind: Kind, *, value: str, target: str, path: str) -> _Site:
        return _Site(
            value, target, path, self.message(f"expected {expected(kind, encode=self.encode)}")
        )

    def compile(self, function_name: str) -> Callable[..., Any]:
        source = "\n".join(self.lines) + "\n"
        filename = f"<rampart.trace generated {function_name}>"
        # Our own generated source, as attrs and cattrs do; linecache makes tracebacks readable.
        exec(compile(source, filename, "exec"), self.namespace)
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        function: Callable[..., Any] = self.namespace[function_name]
        return function


def hook_name(cls: type) -> str:
    return f"hook_{cls.__name__}"


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


# --------------------------------------------------------------------------- one emitter per kind


def _emit(source: _HookSource, kind: Kind, site: _Site) -> None:
    """Write the check of ``site.value`` against ``kind``, leaving the result in ``site.target``."""
    _EMITTERS[type(kind)](source, kind, site)


def _type_check(source: _HookSource, site: _Site, python_type: str) -> None:
    """Decode takes the exact JSON type; encode also takes subclasses (a ``StrEnum``)."""
    check = f"type({site.value}) is not {python_type}"
    if source.encode:
        check += f" and not isinstance({site.value}, {python_type})"
    with source.block(f"if {check}:"):
        source.fail(site, got=site.value)


def _emit_str(source: _HookSource, kind: StrKind, site: _Site) -> None:
    _type_check(source, site, "str")
    if kind.min_length:
        with source.block(f"if len({site.value}) < {kind.min_length}:"):
            source.fail(site)
    source.line(f"{site.target} = {site.value}")


def _emit_bool(source: _HookSource, kind: BoolKind, site: _Site) -> None:
    # bool cannot be subclassed, so one exact type check serves both directions.
    with source.block(f"if type({site.value}) is not bool:"):
        source.fail(site, got=site.value)
    source.line(f"{site.target} = {site.value}")


def _emit_passthrough(source: _HookSource, kind: PassthroughKind, site: _Site) -> None:
    _type_check(source, site, "str")
    if source.encode:
        source.line(f"{site.target} = {site.value}")
    else:
        labels = source.constant({member.value: member for member in kind.enum}, "labels")
        source.line(f"{site.target} = {labels}.get({site.value}, {site.value})")


def _emit_int(source: _HookSource, kind: IntKind, site: _Site) -> None:
    with source.block(f"if type({site.value}) is not int:"):
        if source.encode:
            source.line(f"{site.value} = _int_to_encode({site.value}, {site.message}, {site.path})")
        else:
            source.fail(site, got=site.value)
    if kind.minimum is not None:
        with source.block(f"if {site.value} < {kind.minimum!r}:"):
            source.fail(site)
    source.line(f"{site.target} = {site.value}")


def _emit_float(source: _HookSource, kind: FloatKind, site: _Site) -> None:
    value = site.value
    if source.encode:
        with source.block(f"if type({value}) is not float or {value} - {value} != 0.0:"):
            if kind.non_finite is None:
                source.line(f"{value} = _float_to_encode({value}, {site.message}, {site.path})")
            else:
                stand_in = f"{kind.non_finite!r}"
                source.line(
                    f"{value} = _finite_or({value}, {stand_in}, {site.message}, {site.path})"
                )
    else:
        finite = f"if {value} - {value} != 0.0:"
        with source.block(f"if type({value}) is float:"), source.block(finite):
            source.fail(site)
        with source.block(f"elif type({value}) is int:"):
            source.line(f"{value} = _float_from_int({value}, {site.message}, {site.path})")
        with source.block("else:"):
            source.fail(site, got=value)
    if kind.minimum is not None and kind.maximum is not None:
        outside = f"not {kind.minimum!r} <= {value} <= {kind.maximum!r}"
    elif kind.minimum is not None:
        outside = f"{value} < {kind.minimum!r}"
    elif kind.maximum is not None:
        outside = f"{value} > {kind.maximum!r}"
    else:
        outside = ""
    if outside:
        with source.block(f"if {outside}:"):
            source.fail(site)
    source.line(f"{site.target} = {value}")


def _emit_enum(source: _HookSource, kind: EnumKind, site: _Site) -> None:
    if source.encode:
        enum_cls = source.constant(kind.enum, "enum")
        with source.block(f"if type({site.value}) is not {enum_cls}:"):
            source.fail(site, got=site.value)
        source.line(f"{site.target} = {site.value}._value_")
        if kind.values != tuple(member.value for member in kind.enum):
            allowed = source.constant(frozenset(kind.values), "allowed")
            listed = _allowed_values(kind).removeprefix("one of ")
            narrowed = attrs.evolve(
                site, message=source.message(f"expected a {kind.enum.__name__} among {listed}")
            )
            with source.block(f"if {site.target} not in {allowed}:"):
                source.fail(narrowed)
        return
    members = {member.value: member for member in kind.enum if member.value in kind.values}
    lookup = source.constant(members, "members")
    # Keys are str, so a non-str value misses (or is unhashable): fail closed.
    with source.block("try:"):
        source.line(f"{site.target} = {lookup}[{site.value}]")
    with source.block("except (KeyError, TypeError):"):
        source.fail(site, got=site.value, suffix=" from None")


def _emit_datetime(source: _HookSource, kind: DateTimeKind, site: _Site) -> None:
    if source.encode:
        with source.block(f"if not isinstance({site.value}, _datetime):"):
            source.fail(site, got=site.value)
        source.line(f"{site.target} = {site.value}.isoformat()")
        with source.block(f"if {site.target}[-16] in '+-':"):
            source.line(f"_check_utc_offset({site.target}, {site.path})")
        return
    with source.block(f"if type({site.value}) is not str:"):
        source.fail(site, got=site.value)
    with source.block("try:"):
        source.line(f"{site.target} = _fromisoformat({site.value})")
    with source.block("except ValueError:"):
        source.fail(site, suffix=" from None")


def _emit_json_object(source: _HookSource, kind: JsonObjectKind, site: _Site) -> None:
    _type_check(source, site, "dict")
    if source.encode:  # the parser already guarantees JSON values on decode
        with source.block("try:"):
            source.line(f"_check_json_mapping({site.value})")
        with source.block("except PathError as exc:"):
            source.line(f"exc.segments.extend(({site.path},))")
            source.line("raise")
    source.line(f"{site.target} = {site.value}")


def _emit_null(source: _HookSource, kind: NullKind, site: _Site) -> None:
    with source.block(f"if {site.value} is not None:"):
        source.fail(site)
    source.line(f"{site.target} = None")


def _emit_list(source: _HookSource, kind: ListKind, site: _Site) -> None:
    _type_check(source, site, "list")
    item = kind.item
    if isinstance(item, ModelKind):
        hook = hook_name(item.cls)
        with source.block("try:"):
            source.line(f"{site.target} = [{hook}(item) for item in {site.value}]")
        with source.block("except PathError:"):
            source.line(f"raise _relocate({site.value}, {hook}, {site.path}) from None")
    elif isinstance(item, StrKind) and not item.min_length:
        # Strings are kept as they are, so the list itself is the result.
        message = source.message(f"expected {expected(item, encode=source.encode)}")
        element = source.variable("item")
        check = f"type({element}) is not str"
        if source.encode:
            check += f" and not isinstance({element}, str)"
        with source.block(f"for {element} in {site.value}:"), source.block(f"if {check}:"):
            source.line(f"raise _item_error({message}, {site.value}, {element}, {site.path})")
        source.line(f"{site.target} = {site.value}")
    else:
        index, element, checked = (source.variable(hint) for hint in ("index", "item", "checked"))
        source.line(f"{site.target} = []")
        with source.block(f"for {index}, {element} in enumerate({site.value}):"):
            inner = source.site(item, value=element, target=checked, path=f"{index}, {site.path}")
            _emit(source, item, inner)
            source.line(f"{site.target}.append({checked})")


def _emit_nullable(source: _HookSource, kind: NullableKind, site: _Site) -> None:
    """``inner`` or ``null``; the inner checks keep the widened "... or null" message."""
    with source.block(f"if {site.value} is None:"):
        source.line(f"{site.target} = None")
    with source.block("else:"):
        if isinstance(kind.inner, ModelKind):
            # The nested hook's own type check cannot know that null was an option.
            if source.encode:
                model = source.constant(kind.inner.cls, "model")
                check = f"not isinstance({site.value}, {model})"
            else:
                check = f"type({site.value}) is not dict"
            with source.block(f"if {check}:"):
                source.fail(site, got=site.value)
        _emit(source, kind.inner, site)


def _emit_model(source: _HookSource, kind: ModelKind, site: _Site) -> None:
    with source.block("try:"):
        source.line(f"{site.target} = {hook_name(kind.cls)}({site.value})")
    with source.block("except PathError as exc:"):
        source.line(f"exc.segments.extend(({site.path},))")
        source.line("raise")


_EMITTERS: dict[type, Callable[[_HookSource, Any, _Site], None]] = {
    StrKind: _emit_str,
    BoolKind: _emit_bool,
    PassthroughKind: _emit_passthrough,
    IntKind: _emit_int,
    FloatKind: _emit_float,
    EnumKind: _emit_enum,
    DateTimeKind: _emit_datetime,
    JsonObjectKind: _emit_json_object,
    NullKind: _emit_null,
    ListKind: _emit_list,
    NullableKind: _emit_nullable,
    ModelKind: _emit_model,
}


def _emit_rules(source: _HookSource, spec: ModelSpec, variables: dict[str, str]) -> None:
    """The cross-field rules, checked once every field has its value."""
    kinds = {field.name: field.kind for field in spec.fields}
    for rule in spec.rules:
        message = source.message(f"expected {rule.expected}")
        if isinstance(rule, AnyPresent):
            absent = [
                f"not {variables[name]}"
                if isinstance(kinds[name], ListKind)
                else f"{variables[name]} is None"
                for name in rule.fields
            ]
            with source.block(f"if {' and '.join(absent)}:"):
                source.line(f"raise _error({message})")
        elif isinstance(rule, Requires):
            field, required = variables[rule.field], variables[rule.required]
            with source.block(f"if {field} is not None and {required} is None:"):
                source.line(f"raise _error({message}, _NO_VALUE, {rule.required!r})")
        elif isinstance(rule, LessThan):
            field, bound = variables[rule.field], variables[rule.bound]
            with source.block(f"if {field} >= {bound}:"):
                source.line(f"raise _error({message}, _NO_VALUE, {rule.field!r})")


# --------------------------------------------------------------------------- the two hooks


def compile_decoder(spec: ModelSpec, nested: dict[type, Callable[..., Any]]) -> Callable[..., Any]:
    """A structure hook ``(data, _type=None) -> instance`` for parsed JSON of ``spec``.

    ``nested`` maps each class ``spec`` refers to (:func:`nested_models`) to its hook.
    """
    source = _HookSource(encode=False, nested=nested)
    cls = spec.cls
    source.namespace["_cls"] = cls
    name = f"decode_{cls.__name__}"
    not_object = source.message("expected an object")
    variables = {field.name: f"field_{field.name}" for field in spec.fields}
    with source.block(f"def {name}(data, _type=None):"):
        with source.block("if type(data) is not dict:"):
            source.line(f"raise _error({not_object}, data)")
        for field in spec.fields:
            key, target = repr(field.name), variables[field.name]
            # A subscript in a try block costs nothing when the key is present (the writer
            # always writes every field); only an omitted field pays for the exception.
            with source.block("try:"):
                source.line(f"value = data[{key}]")
            with source.block("except KeyError:"):
                if field.required:
                    source.line(f"raise _missing_field({key}) from None")
                elif field.default_factory is list:
                    source.line(f"{target} = []")
                elif field.default_factory is dict:
                    source.line(f"{target} = {{}}")
                else:
                    source.line(f"{target} = {source.constant(field.default, 'default')}")
            with source.block("else:"):
                site = source.site(field.kind, value="value", target=target, path=key)
                _emit(source, field.kind, site)
        _emit_rules(source, spec, variables)
        arguments = ", ".join(f"{field.name}={variables[field.name]}" for field in spec.fields)
        rejected = source.message(f"expected a value the {cls.__name__} constructor accepts")
        with source.block("try:"):
            source.line(f"return _cls({arguments})")
        with source.block("except (TypeError, ValueError):"):
            source.line(f"raise _error({rejected}) from None")
    return source.compile(name)


def compile_encoder(spec: ModelSpec, nested: dict[type, Callable[..., Any]]) -> Callable[..., Any]:
    """An unstructure hook ``(instance) -> dict`` that validates the live value."""
    source = _HookSource(encode=True, nested=nested)
    cls = spec.cls
    source.namespace["_cls"] = cls
    name = f"encode_{cls.__name__}"
    not_instance = source.message(f"expected a {cls.__name__} instance")
    variables = {field.name: f"field_{field.name}" for field in spec.fields}
    with source.block(f"def {name}(instance):"):
        with source.block("if type(instance) is not _cls and not isinstance(instance, _cls):"):
            source.line(f"raise _error({not_instance}, instance)")
        if spec.prepare is not None:
            source.namespace["_prepare"] = spec.prepare
            source.line("instance = _prepare(instance)")
        for field in spec.fields:
            source.line(f"value = instance.{field.name}")
            site = source.site(
                field.kind, value="value", target=variables[field.name], path=repr(field.name)
            )
            _emit(source, field.kind, site)
        _emit_rules(source, spec, variables)
        members = ", ".join(f"{field.name!r}: {variables[field.name]}" for field in spec.fields)
        source.line(f"return {{{members}}}")
    return source.compile(name)
