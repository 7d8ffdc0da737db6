"""Argument and context checks shared by the built-in evaluators."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.core.types import ObservabilityLevel

if TYPE_CHECKING:
    from rampart.core.types import EvalContext

__all__ = ["level_of", "require_name"]


def require_name(value: object, *, owner: str, name: str) -> str:
    """``value`` if it is a non-blank ``str``; else an error naming ``owner``'s argument."""
    if not isinstance(value, str):
        raise TypeError(f"{owner} {name} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{owner} {name} must be a non-empty string")
    return value


def level_of(context: EvalContext) -> ObservabilityLevel:
    """The context's observability level, checked (evaluators depend on it)."""
    level = context.observability_level
    if not isinstance(level, ObservabilityLevel):
        raise TypeError(
            f"context.observability_level must be an ObservabilityLevel, got {type(level).__name__}"
        )
    return level
