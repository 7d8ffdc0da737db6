"""Evaluators answer "did X happen?" over an ``EvalContext``; strategies turn that into a verdict.

This module holds the evaluator contract: the protocol (``Evaluator``), the base class
that gives ``|``, ``&`` and ``~`` (``BaseEvaluator``), the composites those operators
build, and the classifier ``stop_when="auto"`` relies on (``detected_is_absorbing``).
The built-in evaluators live in ``rampart.evaluators``.

Composition
-----------
``|``, ``&`` and ``~``: three-valued composition of evaluators.

Outcomes follow Kleene logic over DETECTED / NOT_DETECTED / UNDETERMINED, and both
binary operators give the same outcome whichever way round the operands are written.
The left operand runs first and settles the result alone when it can: ``|`` skips the
right operand on a left DETECTED, ``&`` on a left NOT_DETECTED. A skipped operand never
runs, so nothing it would have reported (a gap included) is recorded; that is why an
observability-dependent evaluator belongs on the left of ``&``.

Every operand that ran adds its gaps to ``undetermined_operands`` (see
``rampart.core._gaps.merge_undetermined``); recording a gap never changes the
outcome. Confidence is the deciding operand's when one operand settles the result,
and the lower of the two when both do (NaN, "no usable confidence", if either has
none); confidence never affects an outcome.

Every operand is called through ``rampart.core._contract.evaluate_checked``, the same
check the engine applies to a lone evaluator (its result arrives normalised: text
fields are exact strings, so a rationale whose ``str()`` raises reads
``"<unprintable value>"`` here too): an operand that is not async, returns
no ``EvalResult`` or raises is reported as ``EvaluatorContractError`` /
``EvaluatorError`` naming it and its place (``"right operand of |"``).

A chain written ``a | b | c | ...`` nests to the left; the binary composites walk that
spine in a loop rather than recursing, so long chains built with ``functools.reduce``
do not hit Python's recursion limit.
"""

from __future__ import annotations

import abc
import math
from typing import TYPE_CHECKING, ClassVar

from rampart.core._contract import evaluate_checked
from rampart.core._gaps import as_text, as_text_list, merge_undetermined
from rampart.core._protocols import Evaluator, check_evaluator
from rampart.core.types import EvalOutcome, EvalResult

if TYPE_CHECKING:
    from rampart.core.types import EvalContext

__all__ = [
    "AllEvaluator",
    "AnyEvaluator",
    "BaseEvaluator",
    "Evaluator",
    "NotEvaluator",
    "absorbing_outcomes",
    "detected_is_absorbing",
    "not_detected_is_absorbing",
    "require_evaluator",
]


def require_evaluator(value: object, *, name: str, owner: str = "require_evaluator") -> Evaluator:
    """Return ``value`` if it is an evaluator instance, else ``TypeError`` naming ``owner``'s
    argument ``name`` (the message format of ``rampart._checks``)."""
    return check_evaluator(owner, name, value)


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

        return AnyEvaluator(
            left=self,
            right=require_evaluator(other, owner="AnyEvaluator", name="right operand of |"),
        )

    def __ror__(self, other: Evaluator) -> BaseEvaluator:

        return AnyEvaluator(
            left=require_evaluator(other, owner="AnyEvaluator", name="left operand of |"),
            right=self,
        )

    def __and__(self, other: Evaluator) -> BaseEvaluator:

        return AllEvaluator(
            left=self,
            right=require_evaluator(other, owner="AllEvaluator", name="right operand of &"),
        )

    def __rand__(self, other: Evaluator) -> BaseEvaluator:

        return AllEvaluator(
            left=require_evaluator(other, owner="AllEvaluator", name="left operand of &"),
            right=self,
        )

    def __invert__(self) -> BaseEvaluator:

        return NotEvaluator(inner=self)


def _is_framework_evaluator(evaluator: object) -> bool:
    cls = type(evaluator)
    if cls in _COMPOSITES:
        return True
    module = cls.__module__
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


# --- composition: the classes behind |, & and ~ -------------------------------------

_DETECTED = EvalOutcome.DETECTED
_NOT_DETECTED = EvalOutcome.NOT_DETECTED
_UNDETERMINED = EvalOutcome.UNDETERMINED


def _both_evidence(left: EvalResult, right: EvalResult) -> list[str]:
    return [*as_text_list(left.evidence), *as_text_list(right.evidence)]


def _lower_confidence(left: EvalResult, right: EvalResult) -> float:
    """The lower confidence; NaN (no usable confidence) when either operand has none."""
    lower = left.confidence, right.confidence
    if any(math.isnan(value) for value in lower):
        return math.nan
    return min(lower)


def _undetermined(left: EvalResult, right: EvalResult, *, gaps: list[str]) -> EvalResult:
    """Neither operand settled the result; name the first one that could not answer."""
    if left.outcome is _UNDETERMINED:
        rationale = f"Left operand undetermined: {as_text(left.rationale)}"
    else:
        rationale = f"Right operand undetermined: {as_text(right.rationale)}"
    return EvalResult(
        outcome=_UNDETERMINED,
        confidence=_lower_confidence(left, right),
        evidence=_both_evidence(left, right),
        rationale=rationale,
        undetermined_operands=gaps,
    )


class _BinaryEvaluator(BaseEvaluator):
    """Shared shape of ``|`` and ``&``: two operands, left evaluated first."""

    _symbol: ClassVar[str]

    def __init__(self, *, left: Evaluator, right: Evaluator) -> None:
        self._left = require_evaluator(left, owner=type(self).__name__, name="left")
        self._right = require_evaluator(right, owner=type(self).__name__, name="right")

    @property
    def left(self) -> Evaluator:
        return self._left

    @property
    def right(self) -> Evaluator:
        return self._right

    def _spine(self) -> tuple[Evaluator, list[Evaluator]]:
        """The leftmost operand of a left-nested chain of this operator, and the right
        operands in evaluation order."""
        rights: list[Evaluator] = []
        node: Evaluator = self
        while isinstance(node, _BinaryEvaluator) and type(node) is type(self):
            rights.append(node._right)
            node = node._left
        rights.reverse()
        return node, rights

    def __repr__(self) -> str:
        leftmost, rights = self._spine()
        text = repr(leftmost)
        for right in rights:
            text = f"({text} {self._symbol} {right!r})"
        return text

    def _absorbing(self) -> tuple[bool, bool]:
        # An outcome is stable only if it is stable for every operand.
        leftmost, rights = self._spine()
        detected, not_detected = absorbing_outcomes(leftmost)
        for right in rights:
            right_detected, right_not_detected = absorbing_outcomes(right)
            detected = detected and right_detected
            not_detected = not_detected and right_not_detected
        return (detected, not_detected)

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        leftmost, rights = self._spine()
        result = await evaluate_checked(
            leftmost, context=context, role=f"left operand of {self._symbol}"
        )
        for right in rights:
            result = await self._combine(result, right, context=context)
        return result

    @abc.abstractmethod
    async def _combine(
        self, left: EvalResult, right: Evaluator, *, context: EvalContext
    ) -> EvalResult:
        """One level of the operator, given the left result; runs ``right`` if needed."""


class AnyEvaluator(_BinaryEvaluator):
    """``left | right``: DETECTED when either operand detects.

    Left DETECTED settles it (the right operand is skipped) with the left's evidence
    and rationale; otherwise a right DETECTED does, with the right's. If neither
    detects and either is UNDETERMINED the result is UNDETERMINED, carrying both
    operands' evidence; otherwise NOT_DETECTED ("Neither condition detected").
    """

    _symbol = "|"

    async def _combine(
        self, left: EvalResult, right_operand: Evaluator, *, context: EvalContext
    ) -> EvalResult:
        if left.outcome is _DETECTED:
            return EvalResult(
                outcome=_DETECTED,
                confidence=left.confidence,
                evidence=as_text_list(left.evidence),
                rationale=as_text(left.rationale),
                undetermined_operands=merge_undetermined(left=left),
            )

        right = await evaluate_checked(right_operand, context=context, role="right operand of |")
        gaps = merge_undetermined(left=left, right=right)
        if right.outcome is _DETECTED:
            return EvalResult(
                outcome=_DETECTED,
                confidence=right.confidence,
                evidence=as_text_list(right.evidence),
                rationale=as_text(right.rationale),
                undetermined_operands=gaps,
            )
        if _UNDETERMINED in (left.outcome, right.outcome):
            return _undetermined(left, right, gaps=gaps)
        return EvalResult(
            outcome=_NOT_DETECTED,
            confidence=_lower_confidence(left, right),
            rationale="Neither condition detected",
            undetermined_operands=gaps,
        )


class AllEvaluator(_BinaryEvaluator):
    """``left & right``: DETECTED only when both operands detect.

    Left NOT_DETECTED settles it (the right operand is skipped). An UNDETERMINED left
    does not, because a NOT_DETECTED right still settles the conjunction: stopping
    there would make the outcome depend on operand order. Then a right NOT_DETECTED
    gives NOT_DETECTED (a settling operand's evidence is kept: it says where, e.g. on
    which turn, under a ``~``); otherwise either UNDETERMINED gives UNDETERMINED (both
    operands' evidence); otherwise DETECTED with both operands' evidence and the
    rationale ``"(left) AND (right)"``.
    """

    _symbol = "&"

    async def _combine(
        self, left: EvalResult, right_operand: Evaluator, *, context: EvalContext
    ) -> EvalResult:
        if left.outcome is _NOT_DETECTED:
            return EvalResult(
                outcome=_NOT_DETECTED,
                confidence=left.confidence,
                evidence=as_text_list(left.evidence),
                rationale=f"Left operand not detected: {as_text(left.rationale)}",
                undetermined_operands=merge_undetermined(left=left),
            )

        right = await evaluate_checked(right_operand, context=context, role="right operand of &")
        gaps = merge_undetermined(left=left, right=right)
        if right.outcome is _NOT_DETECTED:
            return EvalResult(
                outcome=_NOT_DETECTED,
                confidence=right.confidence,
                evidence=as_text_list(right.evidence),
                rationale=f"Right operand not detected: {as_text(right.rationale)}",
                undetermined_operands=gaps,
            )
        if _UNDETERMINED in (left.outcome, right.outcome):
            return _undetermined(left, right, gaps=gaps)
        return EvalResult(
            outcome=_DETECTED,
            confidence=_lower_confidence(left, right),
            evidence=_both_evidence(left, right),
            rationale=f"({as_text(left.rationale)}) AND ({as_text(right.rationale)})",
            undetermined_operands=gaps,
        )


class NotEvaluator(BaseEvaluator):
    """``~inner``: flips DETECTED and NOT_DETECTED; UNDETERMINED passes through unchanged.

    A flipped result keeps the inner confidence, evidence and gaps, with the rationale
    ``"NOT (inner rationale)"``. Stability swaps too: ``~a`` is detected-absorbing
    exactly when ``a`` is not-detected-absorbing.
    """

    def __init__(self, *, inner: Evaluator) -> None:
        self._inner = require_evaluator(inner, owner="NotEvaluator", name="inner")

    @property
    def inner(self) -> Evaluator:
        return self._inner

    def __repr__(self) -> str:
        return f"~{self._inner!r}"

    def _absorbing(self) -> tuple[bool, bool]:
        detected, not_detected = absorbing_outcomes(self._inner)
        return (not_detected, detected)

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        result = await evaluate_checked(self._inner, context=context, role="operand of ~")
        if result.outcome is _UNDETERMINED:
            return result
        return EvalResult(
            outcome=_NOT_DETECTED if result.outcome is _DETECTED else _DETECTED,
            confidence=result.confidence,
            evidence=as_text_list(result.evidence),
            rationale=f"NOT ({as_text(result.rationale)})",
            undetermined_operands=merge_undetermined(left=result),
        )


_COMPOSITES = (AnyEvaluator, AllEvaluator, NotEvaluator)
