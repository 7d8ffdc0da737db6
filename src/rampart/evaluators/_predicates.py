"""What ``ToolCalled`` and ``SideEffectOccurred`` share: keyword predicates, and the
three-valued rule of a detector that can only see what the adapter reports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rampart._checks import check_optional_instance
from rampart.core.types import EvalOutcome, EvalResult, ObservabilityLevel

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from rampart.core.types import EvalContext

__all__ = ["matches_all", "observed", "render_call"]


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


def observed(
    owner: str,
    context: EvalContext,
    find: Callable[[], EvalResult | None],
    *,
    reports: Callable[[ObservabilityLevel], bool],
    what: str,
    question: str,
    absent: str,
) -> EvalResult:
    """A detector's verdict: what ``find`` detected (DETECTED at any observability
    level: declaring a lower level cannot hide a real detection); else NOT_DETECTED
    (``absent``) when the context's level ``reports`` ``what``, or states no level (a
    bare ``EvalContext``: the detector only detects, as RAMPART's); else UNDETERMINED,
    naming the level: nothing reported there means "could not see", not "did not
    happen"."""
    level = check_optional_instance(
        f"{owner}.evaluate_async",
        "context.observability_level",
        context.observability_level,
        ObservabilityLevel,
        expected="an ObservabilityLevel",
    )
    found = find()
    if found is not None:
        return found
    if level is not None and not reports(level):
        return EvalResult(
            outcome=EvalOutcome.UNDETERMINED,
            rationale=(
                f"Adapter observability is '{level.value}', which does not report {what}, "
                f"so whether {question} cannot be determined"
            ),
        )
    return EvalResult(outcome=EvalOutcome.NOT_DETECTED, rationale=absent)
