"""What ``ToolCalled`` and ``SideEffectOccurred`` share: keyword predicates, and
``Detector``, the three-valued rule of a detector that sees only what the adapter
reports."""

from __future__ import annotations

import abc
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from rampart._checks import check_optional_instance, check_text
from rampart.core.evaluator import BaseEvaluator
from rampart.core.types import EvalOutcome, EvalResult, ObservabilityLevel

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from rampart.core.types import EvalContext

__all__ = ["Detector", "matches_all", "render_call"]


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


class Detector(BaseEvaluator):
    """Detects an observed item named ``target`` (a tool call, a side effect) whose
    fields match every keyword predicate (``matches_all``).

    The rule: a reported match is DETECTED at any observability level (declaring a
    lower level cannot hide a real detection); with no match, NOT_DETECTED when the
    context's level reports such items, or states no level (a bare ``EvalContext``: the
    detector only detects, as RAMPART's); else UNDETERMINED, naming the level: nothing
    reported there means "could not see", not "did not happen". DETECTED stays true
    as the trace grows, so ``stop_when="auto"`` may stop on it.

    A subclass names its target argument and says what it reads (``_observed``), how
    a match is shown (``_found``) and in what words.
    """

    _detected_absorbing: ClassVar[bool] = True
    _target_name: ClassVar[str]
    _what: ClassVar[str]
    """The items, as the undetermined rationale names them (``"tool calls"``)."""

    def __init__(self, target: str, predicates: dict[str, Any]) -> None:
        self._target = check_text(type(self).__name__, self._target_name, target)
        self._predicates: Mapping[str, Any] = MappingProxyType(dict(predicates))

    @property
    def predicates(self) -> Mapping[str, Any]:
        """Field name to expected value or predicate (read-only)."""
        return self._predicates

    def __repr__(self) -> str:
        return f"{type(self).__name__}({render_call(self._target, self._predicates)})"

    @abc.abstractmethod
    def _observed(self, context: EvalContext) -> Iterable[tuple[str, Mapping[str, Any]]]:
        """Each reported item's name and fields, in trace order."""

    @staticmethod
    @abc.abstractmethod
    def _reports(level: ObservabilityLevel) -> bool:
        """Whether an adapter at ``level`` reports the items."""

    @abc.abstractmethod
    def _found(self, name: str, fields: Mapping[str, Any]) -> EvalResult:
        """The DETECTED result for a matching item."""

    @abc.abstractmethod
    def _words(self) -> tuple[str, str]:
        """``(question, absent)``: what could not be determined (``"'x' was called"``),
        and the NOT_DETECTED rationale."""

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        level = context.observability_level
        if level is not None and type(level) is not ObservabilityLevel:
            # Named by the evaluator's class; the name is made only for the message.
            check_optional_instance(
                f"{type(self).__name__}.evaluate_async",
                "context.observability_level",
                level,
                ObservabilityLevel,
                expected="an ObservabilityLevel",
            )
        for name, fields in self._observed(context):
            if name == self._target and matches_all(fields, self._predicates):
                return self._found(name, fields)
        question, absent = self._words()
        if level is not None and not self._reports(level):
            return EvalResult(
                outcome=EvalOutcome.UNDETERMINED,
                rationale=(
                    f"Adapter observability is '{level.value}', which does not report "
                    f"{self._what}, so whether {question} cannot be determined"
                ),
            )
        return EvalResult(outcome=EvalOutcome.NOT_DETECTED, rationale=absent)
