"""Evaluators answer "did X happen?" over an ``EvalContext``; strategies turn that into a verdict.

This module holds the contract (``Evaluator``), the base class that gives ``|``, ``&``
and ``~`` (``BaseEvaluator``), and the classifier ``stop_when="auto"`` relies on
(``detected_is_absorbing``). The built-in evaluators and the composites live in
``rampart.evaluators``.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from rampart.core.types import EvalContext, EvalResult

__all__ = [
    "BaseEvaluator",
    "Evaluator",
    "absorbing_outcomes",
    "detected_is_absorbing",
    "not_detected_is_absorbing",
    "require_evaluator",
]


@runtime_checkable
class Evaluator(Protocol):
    """Polarity-free detector. Always async, so compositions with LLM judges work."""

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult: ...


def require_evaluator(value: object, *, name: str) -> Evaluator:
    """Return ``value`` if it is an evaluator, else raise ``TypeError`` naming ``name``."""
    if isinstance(value, type):
        raise TypeError(
            f"{name} must be an Evaluator instance, got the class {value.__name__} "
            "(did you forget to call it?)"
        )
    if isinstance(value, Evaluator) and callable(value.evaluate_async):
        return value
    raise TypeError(
        f"{name} must be an Evaluator (an object with an async "
        f"evaluate_async(*, context) method), got {type(value).__name__}"
    )


class BaseEvaluator(abc.ABC):
    """Base for built-in and user evaluators; ``|``, ``&`` and ``~`` compose them.

    ``a | b`` detects when either detects, ``a & b`` when both do, ``~a`` flips
    DETECTED and NOT_DETECTED (UNDETERMINED passes through). A plain object that only
    implements the ``Evaluator`` protocol can be either operand.

    ``_detected_absorbing`` declares that a DETECTED outcome stays DETECTED as the trace
    grows (so stopping early on it is safe); ``_not_detected_absorbing`` the same for
    NOT_DETECTED. Only framework evaluators are trusted with them (see
    ``detected_is_absorbing``).
    """

    _detected_absorbing: ClassVar[bool] = False
    _not_detected_absorbing: ClassVar[bool] = False

    @abc.abstractmethod
    async def evaluate_async(self, *, context: EvalContext) -> EvalResult: ...

    def _absorbing(self) -> tuple[bool, bool]:
        """``(detected_absorbing, not_detected_absorbing)`` as this evaluator declares it.

        Subclasses whose stability depends on configuration or operands override it.
        """
        return (self._detected_absorbing is True, self._not_detected_absorbing is True)

    def __or__(self, other: Evaluator) -> BaseEvaluator:
        from rampart.evaluators._composite import AnyEvaluator

        return AnyEvaluator(left=self, right=require_evaluator(other, name="right operand of |"))

    def __ror__(self, other: Evaluator) -> BaseEvaluator:
        from rampart.evaluators._composite import AnyEvaluator

        return AnyEvaluator(left=require_evaluator(other, name="left operand of |"), right=self)

    def __and__(self, other: Evaluator) -> BaseEvaluator:
        from rampart.evaluators._composite import AllEvaluator

        return AllEvaluator(left=self, right=require_evaluator(other, name="right operand of &"))

    def __rand__(self, other: Evaluator) -> BaseEvaluator:
        from rampart.evaluators._composite import AllEvaluator

        return AllEvaluator(left=require_evaluator(other, name="left operand of &"), right=self)

    def __invert__(self) -> BaseEvaluator:
        from rampart.evaluators._composite import NotEvaluator

        return NotEvaluator(inner=self)


def _is_framework_evaluator(evaluator: object) -> bool:
    module = type(evaluator).__module__
    return module == "rampart.evaluators" or module.startswith("rampart.evaluators.")


def absorbing_outcomes(evaluator: object) -> tuple[bool, bool]:
    """``(detected_is_absorbing, not_detected_is_absorbing)`` in one walk of the tree.

    Composites use it to classify each operand once (asking for the two flags
    separately would revisit every subtree twice per level).
    """
    # Trust is decided by where the class is defined, not by what it claims: a
    # third-party evaluator (even a subclass of a built-in) is never absorbing.
    if not _is_framework_evaluator(evaluator):
        return (False, False)
    if isinstance(evaluator, BaseEvaluator):
        return evaluator._absorbing()
    return (
        getattr(evaluator, "_detected_absorbing", False) is True,
        getattr(evaluator, "_not_detected_absorbing", False) is True,
    )


def detected_is_absorbing(evaluator: object) -> bool:
    """True when a DETECTED outcome can never be undone by later turns.

    ``stop_when="auto"`` stops early only on such evaluators. It holds for
    ``ToolCalled``, ``SideEffectOccurred`` and ``ResponseContains(scope=ANY_TURN)``;
    ``a | b`` and ``a & b`` only when both operands hold it; ``~a`` when ``a``'s
    NOT_DETECTED is absorbing. Third-party evaluators never hold it.
    """
    return absorbing_outcomes(evaluator)[0]


def not_detected_is_absorbing(evaluator: object) -> bool:
    """True when a NOT_DETECTED outcome can never be undone by later turns.

    Holds for ``ResponseContains(scope=ALL_TURNS)`` and for ``~a`` when ``a``'s
    DETECTED is absorbing; composition follows the same rules as
    ``detected_is_absorbing``.
    """
    return absorbing_outcomes(evaluator)[1]
