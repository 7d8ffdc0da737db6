"""Evaluators answer "did X happen?" over an ``EvalContext``; strategies turn that into a verdict."""

from __future__ import annotations

import abc
from typing import ClassVar, Protocol, runtime_checkable

from rampart.core.types import EvalContext, EvalResult

__all__ = ["BaseEvaluator", "Evaluator", "detected_is_absorbing", "not_detected_is_absorbing"]


@runtime_checkable
class Evaluator(Protocol):
    """Polarity-free detector. Always async, so compositions with LLM judges work."""

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult: ...


class BaseEvaluator(abc.ABC):
    """Base for built-in and user evaluators; ``|``, ``&`` and ``~`` compose them.

    ``_detected_absorbing`` declares that a DETECTED outcome stays DETECTED as the trace
    grows (so it is safe to stop early on it); only framework evaluators are trusted
    with it (see ``detected_is_absorbing``).
    """

    _detected_absorbing: ClassVar[bool] = False
    _not_detected_absorbing: ClassVar[bool] = False

    @abc.abstractmethod
    async def evaluate_async(self, *, context: EvalContext) -> EvalResult: ...

    def __or__(self, other: Evaluator) -> BaseEvaluator:
        from rampart.evaluators._composite import AnyEvaluator

        return AnyEvaluator(left=self, right=other)

    def __and__(self, other: Evaluator) -> BaseEvaluator:
        from rampart.evaluators._composite import AllEvaluator

        return AllEvaluator(left=self, right=other)

    def __invert__(self) -> BaseEvaluator:
        from rampart.evaluators._composite import NotEvaluator

        return NotEvaluator(inner=self)


def _is_framework_evaluator(evaluator: object) -> bool:
    module = type(evaluator).__module__
    return module == "rampart.evaluators" or module.startswith("rampart.evaluators.")


def detected_is_absorbing(evaluator: object) -> bool:
    """True when a DETECTED outcome can never be undone by later turns.

    Only framework evaluators can claim it; a third-party evaluator never does, so
    ``stop_when="auto"`` never stops early on one. Composites answer for themselves
    through ``absorbs_detected()``.
    """
    if not _is_framework_evaluator(evaluator):
        return False
    method = getattr(evaluator, "absorbs_detected", None)
    if callable(method):
        return bool(method())
    return bool(getattr(evaluator, "_detected_absorbing", False))


def not_detected_is_absorbing(evaluator: object) -> bool:
    """True when a NOT_DETECTED outcome can never be undone by later turns."""
    if not _is_framework_evaluator(evaluator):
        return False
    method = getattr(evaluator, "absorbs_not_detected", None)
    if callable(method):
        return bool(method())
    return bool(getattr(evaluator, "_not_detected_absorbing", False))
