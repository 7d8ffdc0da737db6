"""The JSON report's run-level sections through the codec's one converter.

A report's ``trial_groups`` entries (``TrialGroupSummary``) and its ``run`` object
(``RunInfo``) are plain attrs values, written field by field in field order and read
back with unknown keys ignored (a newer report stays readable). They go through the
same cattrs converter as the trace records (``_record._codec_state``), so rampart has
one converter for everything it writes; the section classes check their own fields
on construction, and a shape the converter cannot build is a ``ValueError`` naming
the class and the path.
"""

from __future__ import annotations

from typing import Any, TypeVar

from rampart._checks import invalid
from rampart.codec._record import _codec_state

__all__ = ["section_from_json", "section_to_json"]

_T = TypeVar("_T")


def section_to_json(value: object) -> dict[str, Any]:
    """``value``'s JSON object, keys in field order."""
    data: dict[str, Any] = _codec_state().converter.unstructure(value)
    return data


def _describe(exc: BaseException, _type: object) -> str:
    """A field check's own message (it names the class and field), else the error type."""
    return str(exc) if isinstance(exc, TypeError | ValueError) else type(exc).__name__


def section_from_json(cls: type[_T], data: object) -> _T:
    """``data`` structured as ``cls``; a wrong shape is a ``ValueError`` naming the class."""
    state = _codec_state()
    if not isinstance(data, dict):
        raise invalid(f"{cls.__name__}.from_json", "data", "a dict", data)
    try:
        return state.converter.structure(data, cls)
    except state.validation_error as exc:
        details = "; ".join(state.transform_error(exc, format_exception=_describe))
        raise ValueError(f"{cls.__name__}.from_json: {details}") from None
    except (TypeError, ValueError) as exc:  # a field check in the class itself
        raise ValueError(f"{cls.__name__}.from_json: {exc}") from None
