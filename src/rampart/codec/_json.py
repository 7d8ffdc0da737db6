"""JSON text, strictly: what the codec accepts as JSON and what it writes.

Reading (:func:`parse`) enforces the rules about the text itself, before any record
rule is looked at. They are rampart's one JSON reading policy, for every file, body
and state it reads (:func:`parse_strict_json` is the public name):

* the text is at most :data:`MAX_JSON_CHARS` characters (callers may set less) and
  nested at most :data:`MAX_JSON_DEPTH` arrays/objects deep, checked on the text before
  it is parsed, so no reader, walker or consumer of the value ever recurses without
  bound (a hostile file or body nested 100,000 deep is a ``SchemaError``, never a
  ``RecursionError``);
* numbers are finite: ``NaN``/``Infinity`` constants and numbers that overflow a float
  (``1e999``) are rejected;
* every object names each member once: a duplicate key is an error wherever it is, so
  that no verdict ever depends on which duplicate a parser keeps;
* strings and keys are Unicode scalar values (no lone surrogates). This is proved for
  the whole text in one C-speed pass; only when that fails is the document walked.

Failures name the path. The walk that finds it follows the record's field kinds when it
is given them, so schema fields are named (``$.result.status``) and every other key is
reported by position only.

Writing (:func:`dump`) is compact and not ASCII-escaped; :func:`check_json_mapping`
first makes sure a live free-form mapping holds JSON values only.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any, Final

from rampart.codec._paths import NO_VALUE, PathError, Position, key_position
from rampart.codec._schema import Kind, ListKind, ModelKind, NullableKind, model_spec
from rampart.core.errors import SchemaError

__all__ = [
    "MAX_JSON_CHARS",
    "MAX_JSON_DEPTH",
    "NON_FINITE_MESSAGE",
    "NonFiniteNumber",
    "check_json_mapping",
    "check_limits",
    "check_text",
    "dump",
    "finite_decoder",
    "find_surrogate",
    "parse",
    "parse_strict_json",
    "text_has_surrogates",
]

# --------------------------------------------------------------------------- limits

MAX_JSON_DEPTH: Final = 128
"""Deepest nesting of arrays and objects any rampart reader accepts (a record uses 8)."""

MAX_JSON_CHARS: Final = 256 * 1024 * 1024
"""Longest JSON text any rampart reader accepts by default (256 Mi characters)."""

# Every byte that is not a bracket (deleted by ``bytes.translate``) and each bracket's
# step in depth.
_NOT_BRACKETS: Final = bytes(byte for byte in range(256) if byte not in b"[]{}")
_STEP: Final = [0] * 256
for _byte in b"[{":
    _STEP[_byte] = 1
for _byte in b"]}":
    _STEP[_byte] = -1


def nesting_depth(text: str) -> int:
    """How deep arrays and objects nest in the JSON ``text``; linear, C-speed passes.

    Brackets inside strings do not count: escaped backslashes and escaped quotes are
    removed first, so every remaining ``"`` opens or closes a string and the text
    between every other pair is outside them. For text that is not JSON the figure is
    an upper bound of what a parser would reach before failing.
    """
    if "\\" in text:
        text = text.replace("\\\\", "").replace('\\"', "")
    outside = "".join(text.split('"')[::2]).encode("utf-8", "surrogatepass")
    skeleton = outside.translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, skeleton)), default=0)


def check_limits(
    text: str, *, max_depth: int = MAX_JSON_DEPTH, max_chars: int = MAX_JSON_CHARS
) -> None:
    """Raise :class:`SchemaError` if ``text`` is longer or nested deeper than allowed.

    Runs before parsing. Most texts hold fewer brackets than ``max_depth``, which two
    ``str.count`` passes prove; only the others get the :func:`nesting_depth` scan.
    """
    if len(text) > max_chars:
        raise SchemaError(f"$: JSON text is too long (more than {max_chars} characters)")
    if text.count("[") + text.count("{") > max_depth and nesting_depth(text) > max_depth:
        raise SchemaError(
            f"$: JSON nesting is too deep (more than {max_depth} levels of arrays and objects)"
        )


# --------------------------------------------------------------------------- reading


class _NonFiniteNumber(Exception):
    """Raised from the parser hooks of :func:`finite_decoder`; :func:`parse` makes it a
    SchemaError."""


NonFiniteNumber = _NonFiniteNumber  # what readers with their own decoder catch


class _RepeatedKey(Exception):
    """Raised from the parser hooks; :func:`parse` then finds where it happened."""


def _reject_constant(name: str) -> Any:
    raise _NonFiniteNumber


def _parse_float(text: str) -> float:
    value = float(text)
    if value - value != 0.0:  # 1e999 overflows to inf
        raise _NonFiniteNumber
    return value


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) != len(pairs):
        raise _RepeatedKey
    return members


class _RepeatedMembers(dict[str, Any]):
    """An object that named a member twice, built only to find where that happened."""

    key: str
    position: int


def _mark_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) == len(pairs):
        return members
    seen: set[str] = set()
    for position, (key, _value) in enumerate(pairs):  # pragma: no branch
        if key in seen:
            marked = _RepeatedMembers(members)
            marked.key, marked.position = key, position
            return marked
        seen.add(key)
    return members  # pragma: no cover


_DECODER: Final = json.JSONDecoder(
    parse_float=_parse_float,
    parse_constant=_reject_constant,
    object_pairs_hook=_unique_members,
)
_LOCATING_DECODER: Final = json.JSONDecoder(
    parse_float=_parse_float,
    parse_constant=_reject_constant,
    object_pairs_hook=_mark_repeats,
)


def finite_decoder(object_pairs_hook: Any = None) -> json.JSONDecoder:
    """A ``JSONDecoder`` with the policy's number rule: ``NaN``, ``Infinity`` and numbers
    that overflow a float raise :class:`NonFiniteNumber`.

    For readers that keep their own object hook (the agent-body parser names keys in
    its own dialect); run :func:`check_limits` on the text first.
    """
    return json.JSONDecoder(
        parse_float=_parse_float,
        parse_constant=_reject_constant,
        object_pairs_hook=object_pairs_hook,
    )


NON_FINITE_MESSAGE: Final = (
    "$: expected finite JSON numbers (NaN, Infinity and numbers that overflow a float are "
    "not accepted)"
)
_NON_FINITE = NON_FINITE_MESSAGE
_REPEATED_KEY = "duplicate key (a member name may appear only once per object)"


def check_text(data: object) -> str:
    """``data`` if it is a ``str``; the message names the argument, never the data."""
    if not isinstance(data, str):
        raise SchemaError(f"data: expected JSON text as a str, got {type(data).__name__}")
    return data


def parse_strict_json(
    *, data: str, max_depth: int = MAX_JSON_DEPTH, max_chars: int = MAX_JSON_CHARS
) -> Any:
    """Parse JSON text the way every rampart reader does, or raise :class:`SchemaError`.

    On top of the JSON grammar: the text is at most ``max_chars`` long and nested at
    most ``max_depth`` deep (checked before parsing), numbers must be finite (no
    ``NaN``, ``Infinity`` or ``1e999``), no object may name a member twice, and strings
    and keys must be Unicode scalar values (no lone surrogates). The message names the path
    (``$[<key #1>]: duplicate key ...``), with object keys by position, and never echoes
    the text. Use it for any rampart JSON a safety decision is read from (a report, a
    transport payload); :func:`~rampart.codec.deserialize_record` applies the same rules
    to records.
    """
    return parse(check_text(data), max_depth=max_depth, max_chars=max_chars)


def parse(
    data: str,
    fields: dict[str, Kind] | None = None,
    *,
    max_depth: int = MAX_JSON_DEPTH,
    max_chars: int = MAX_JSON_CHARS,
) -> Any:
    """The value of strict JSON text, or a :class:`SchemaError` naming what is wrong.

    ``fields`` are the member kinds of the top-level object (a record's envelope); with
    them a failure is reported under schema field names, without them every key is
    reported by position.
    """
    check_limits(data, max_depth=max_depth, max_chars=max_chars)
    try:
        document = _decode(_DECODER, data)
    except _RepeatedKey:
        raise SchemaError(_locate_repeat(data, fields).render()) from None
    if may_hold_surrogates(data):
        try:
            located = find_surrogate(document, fields)
        except RecursionError:
            raise SchemaError("$: JSON nesting is too deep to decode") from None
        if located is not None:
            raise SchemaError(located.render())
    return document


def _decode(decoder: json.JSONDecoder, data: str) -> Any:
    try:
        return decoder.decode(data)
    except _NonFiniteNumber:
        raise SchemaError(_NON_FINITE) from None
    except json.JSONDecodeError as exc:
        # Some messages end in "at" ("Unterminated string starting at"): not "at at".
        where = f"line {exc.lineno} column {exc.colno}"
        raise SchemaError(
            f"$: expected JSON text ({exc.msg.removesuffix(' at')} at {where})"
        ) from None
    except RecursionError:
        raise SchemaError("$: JSON nesting is too deep to decode") from None
    except ValueError:  # e.g. an integer beyond the interpreter's digit limit
        raise SchemaError("$: expected JSON numbers this reader can represent") from None


def _locate_repeat(data: str, fields: dict[str, Kind] | None) -> PathError:
    """The path of the first object (in document order) that repeats a member name."""
    document = _decode(_LOCATING_DECODER, data)
    try:
        _scan(document, _Envelope(fields), repeats=True)
    except PathError as exc:
        return exc
    except RecursionError:
        raise SchemaError("$: JSON nesting is too deep to decode") from None
    return PathError(_REPEATED_KEY)  # pragma: no cover


# --------------------------------------------------------------------------- surrogates

_SCALAR_STRING = "expected a string of Unicode scalar values (lone surrogates are not allowed)"
_SCALAR_KEY = "expected keys of Unicode scalar values (lone surrogates are not allowed)"
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


def text_has_surrogates(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (one C-speed pass)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def may_hold_surrogates(data: str) -> bool:
    """Whether JSON text could decode to a string holding a surrogate code point.

    Most records hold no backslash at all, which one ``memchr`` pass proves. False
    positives (an escaped backslash before ``ud800``, a valid surrogate pair) only cost
    a walk of the parsed document.
    """
    if text_has_surrogates(data):
        return True
    return data.find("\\") != -1 and _SURROGATE_ESCAPE.search(data) is not None


def find_surrogate(document: Any, fields: dict[str, Kind] | None) -> PathError | None:
    """The path of the first string or key in ``document`` holding a surrogate."""
    try:
        _scan(document, _Envelope(fields), repeats=False)
    except PathError as exc:
        return exc
    return None


# --------------------------------------------------------------------------- the walk


class _Envelope:
    """The kind of a top-level object whose member kinds are ``fields`` (or unknown)."""

    __slots__ = ("fields",)

    def __init__(self, fields: dict[str, Kind] | None) -> None:
        self.fields = fields


def _scan(value: object, kind: Kind | _Envelope | None, *, repeats: bool) -> None:
    """Raise the first problem under ``value``: a repeated key, or else a surrogate.

    ``kind`` is what the record contract says ``value`` is (``None`` when it is free-form
    or unrecognized), so members are named only where the schema names them.
    """
    while isinstance(kind, NullableKind):
        kind = kind.inner
    if isinstance(value, str):
        if not repeats and text_has_surrogates(value):
            raise PathError(_SCALAR_STRING)
    elif isinstance(value, dict):
        if isinstance(kind, _Envelope):
            fields = kind.fields
        elif isinstance(kind, ModelKind):
            fields = {field.name: field.kind for field in model_spec(kind.cls).fields}
        else:
            fields = None
        _scan_members(value, fields, repeats=repeats)
    elif isinstance(value, list):
        item = kind.item if isinstance(kind, ListKind) else None
        for index, element in enumerate(value):
            try:
                _scan(element, item, repeats=repeats)
            except PathError as exc:
                exc.segments.append(index)
                raise


def _member_segment(key: object, position: int, fields: dict[str, Kind] | None) -> object:
    if fields is not None and isinstance(key, str) and key in fields:
        return key
    return Position("key" if fields is None else "unrecognized member", position)


def _scan_members(
    mapping: dict[Any, Any], fields: dict[str, Kind] | None, *, repeats: bool
) -> None:
    if repeats and type(mapping) is _RepeatedMembers:
        segment = _member_segment(mapping.key, mapping.position, fields)
        raise PathError(_REPEATED_KEY, NO_VALUE, segment)
    for position, (key, value) in enumerate(mapping.items()):
        segment = _member_segment(key, position, fields)
        if not repeats and isinstance(key, str) and text_has_surrogates(key):
            raise PathError(_SCALAR_KEY, NO_VALUE, segment)
        member_kind = fields.get(key) if fields is not None and isinstance(key, str) else None
        try:
            _scan(value, member_kind, repeats=repeats)
        except PathError as exc:
            exc.segments.append(segment)
            raise


# --------------------------------------------------------------------------- writing

_ENCODER: Final = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, check_circular=False, separators=(",", ":")
)


def dump(document: Any) -> str:
    """Compact JSON text, written as-is (``ensure_ascii=False``); values were checked."""
    return _ENCODER.encode(document)


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
            raise PathError("expected string keys", key, key_position(mapping, key))
        if type(value) in _JSON_LEAVES:
            continue
        try:
            _check_value(value, active)
        except PathError as exc:
            exc.segments.append(key_position(mapping, key))
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
