"""Keyword predicates shared by ``ToolCalled`` and ``SideEffectOccurred``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["matches_all", "render_call"]


def matches_all(values: Mapping[str, Any], predicates: Mapping[str, Any]) -> bool:
    """True when every predicate holds for ``values``.

    A callable predicate is called with ``values.get(key)`` (``None`` when the key is
    missing) and must return something truthy; any other predicate must compare equal.
    """
    for key, predicate in predicates.items():
        value = values.get(key)
        if callable(predicate):
            if not predicate(value):
                return False
        elif value != predicate:
            return False
    return True


def _render_predicate(predicate: Any) -> str:
    if callable(predicate):
        name = getattr(predicate, "__qualname__", None) or type(predicate).__name__
        return f"<predicate {name}>"
    return repr(predicate)


def render_call(head: str, predicates: Mapping[str, Any]) -> str:
    """``Name('head', key=value, ...)``-style text for an evaluator's repr."""
    parts = [repr(head), *(f"{key}={_render_predicate(p)}" for key, p in predicates.items())]
    return ", ".join(parts)
