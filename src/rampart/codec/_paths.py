"""Where a record breaks the contract: :class:`PathError` and the path it renders.

A failure names the JSON path (``$.result.turns[2].turn_number``) and what was
expected, never the offending value or a producer-chosen key: keys of free-form
mappings and unrecognized members appear by position (``[<key #3>]``).

The path is collected innermost-first while the exception unwinds (each enclosing hook
appends its own segment), and the message is rendered only when it is read, so a
successful encode or decode builds nothing path-related.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from rampart.core.errors import SchemaError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = [
    "NO_VALUE",
    "PathError",
    "Position",
    "describe_type",
    "item_error",
    "key_position",
    "missing_field",
    "relocate",
]

NO_VALUE: Final = object()
"""Stands for "no value to describe" (a bound or format failed, not the type)."""

_JSON_TYPE_NAMES: Final = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def describe_type(value: object) -> str:
    """The JSON name of ``value``'s type (``integer``, ``object``), else the class name."""
    kind = type(value)
    return _JSON_TYPE_NAMES.get(kind) or kind.__name__


class Position:
    """A path segment that names a position, never a producer-chosen key."""

    __slots__ = ("label", "position")

    def __init__(self, label: str, position: int) -> None:
        self.label = label
        self.position = position

    def __str__(self) -> str:
        return f"[<{self.label} #{self.position}>]"


class PathError(SchemaError):
    """A rule violation at a JSON path; the message is rendered on demand.

    ``segments`` holds the path innermost-first: a ``str`` is a member name, an ``int``
    an array index, a :class:`Position` a key named by position.
    """

    def __init__(self, problem: str, got: object = NO_VALUE, *segments: object) -> None:
        super().__init__()
        self.problem = problem
        self.got = None if got is NO_VALUE else describe_type(got)
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


def missing_field(name: str) -> PathError:
    return PathError("required field is missing", NO_VALUE, name)


def key_position(mapping: dict[Any, Any], key: object) -> Position:
    """The segment of ``key`` in ``mapping``: its position, never its text."""
    position = next(index for index, candidate in enumerate(mapping) if candidate is key)
    return Position("key", position)


def item_error(problem: str, items: list[Any], item: object, name: str) -> PathError:
    """A failure of ``item`` (an element of the array field ``name``), located by index."""
    index = next(position for position, candidate in enumerate(items) if candidate is item)
    return PathError(problem, item, index, name)


def relocate(items: Iterable[Any], hook: Callable[[Any], Any], name: str) -> PathError:
    """Re-run ``hook`` over ``items`` to attach the index of the first failing item.

    Arrays of models are converted with one comprehension (no per-item bookkeeping); only
    when it fails is the failing index worth finding.
    """
    for index, item in enumerate(items):
        try:
            hook(item)
        except PathError as exc:
            exc.segments.extend((index, name))
            return exc
    return PathError("expected valid elements", NO_VALUE, name)  # pragma: no cover
