"""``|``, ``&`` and ``~``: three-valued composition of evaluators.

Outcomes follow Kleene logic over DETECTED / NOT_DETECTED / UNDETERMINED, and both
binary operators give the same outcome whichever way round the operands are written.
The left operand runs first and settles the result alone when it can: ``|`` skips the
right operand on a left DETECTED, ``&`` on a left NOT_DETECTED. A skipped operand never
runs, so nothing it would have reported (a gap included) is recorded; that is why an
observability-dependent evaluator belongs on the left of ``&``.

Every operand that ran adds its gaps to ``undetermined_operands`` (see
``rampart.evaluators._gaps.merge_undetermined``); recording a gap never changes the
outcome. Confidence is the deciding operand's when one operand settles the result,
and the lower of the two when both do.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from rampart.core.evaluator import (
    BaseEvaluator,
    detected_is_absorbing,
    not_detected_is_absorbing,
    require_evaluator,
)
from rampart.core.types import EvalOutcome, EvalResult
from rampart.evaluators._gaps import as_text, as_text_list, merge_undetermined

if TYPE_CHECKING:
    from rampart.core.evaluator import Evaluator
    from rampart.core.types import EvalContext

__all__ = ["AllEvaluator", "AnyEvaluator", "NotEvaluator"]

_DETECTED = EvalOutcome.DETECTED
_NOT_DETECTED = EvalOutcome.NOT_DETECTED
_UNDETERMINED = EvalOutcome.UNDETERMINED


async def _run(operand: Evaluator, *, context: EvalContext, role: str) -> EvalResult:
    """Evaluate one operand and check it kept the contract, naming it if not."""
    pending = operand.evaluate_async(context=context)
    if not inspect.isawaitable(pending):
        raise TypeError(
            f"{role} operand {operand!r}: evaluate_async must be async, "
            f"but it returned {type(pending).__name__}"
        )
    result = await pending
    if not isinstance(result, EvalResult):
        raise TypeError(
            f"{role} operand {operand!r}: evaluate_async returned "
            f"{type(result).__name__}, expected EvalResult"
        )
    if not isinstance(result.outcome, EvalOutcome):
        raise TypeError(
            f"{role} operand {operand!r}: EvalResult.outcome must be an EvalOutcome, "
            f"got {result.outcome!r}"
        )
    return result


def _both_evidence(left: EvalResult, right: EvalResult) -> list[str]:
    return [*as_text_list(left.evidence), *as_text_list(right.evidence)]


def _lower_confidence(left: EvalResult, right: EvalResult) -> float:
    return min(left.confidence, right.confidence)


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


class AnyEvaluator(BaseEvaluator):
    """``left | right``: DETECTED when either operand detects.

    Left DETECTED settles it (the right operand is skipped) with the left's evidence
    and rationale; otherwise a right DETECTED does, with the right's. If neither
    detects and either is UNDETERMINED the result is UNDETERMINED, carrying both
    operands' evidence; otherwise NOT_DETECTED ("Neither condition detected").
    """

    def __init__(self, *, left: Evaluator, right: Evaluator) -> None:
        self._left = require_evaluator(left, name="left")
        self._right = require_evaluator(right, name="right")

    @property
    def left(self) -> Evaluator:
        return self._left

    @property
    def right(self) -> Evaluator:
        return self._right

    def __repr__(self) -> str:
        return f"({self._left!r} | {self._right!r})"

    def _absorbing(self) -> tuple[bool, bool]:
        return (
            detected_is_absorbing(self._left) and detected_is_absorbing(self._right),
            not_detected_is_absorbing(self._left) and not_detected_is_absorbing(self._right),
        )

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        left = await _run(self._left, context=context, role="left")
        if left.outcome is _DETECTED:
            return EvalResult(
                outcome=_DETECTED,
                confidence=left.confidence,
                evidence=as_text_list(left.evidence),
                rationale=as_text(left.rationale),
                undetermined_operands=merge_undetermined(left=left),
            )

        right = await _run(self._right, context=context, role="right")
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


class AllEvaluator(BaseEvaluator):
    """``left & right``: DETECTED only when both operands detect.

    Left NOT_DETECTED settles it (the right operand is skipped). An UNDETERMINED left
    does not, because a NOT_DETECTED right still settles the conjunction: stopping
    there would make the outcome depend on operand order. Then a right NOT_DETECTED
    gives NOT_DETECTED; otherwise either UNDETERMINED gives UNDETERMINED (both
    operands' evidence); otherwise DETECTED with both operands' evidence and the
    rationale ``"(left) AND (right)"``.
    """

    def __init__(self, *, left: Evaluator, right: Evaluator) -> None:
        self._left = require_evaluator(left, name="left")
        self._right = require_evaluator(right, name="right")

    @property
    def left(self) -> Evaluator:
        return self._left

    @property
    def right(self) -> Evaluator:
        return self._right

    def __repr__(self) -> str:
        return f"({self._left!r} & {self._right!r})"

    def _absorbing(self) -> tuple[bool, bool]:
        return (
            detected_is_absorbing(self._left) and detected_is_absorbing(self._right),
            not_detected_is_absorbing(self._left) and not_detected_is_absorbing(self._right),
        )

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        left = await _run(self._left, context=context, role="left")
        if left.outcome is _NOT_DETECTED:
            return EvalResult(
                outcome=_NOT_DETECTED,
                confidence=left.confidence,
                rationale=f"Left operand not detected: {as_text(left.rationale)}",
                undetermined_operands=merge_undetermined(left=left),
            )

        right = await _run(self._right, context=context, role="right")
        gaps = merge_undetermined(left=left, right=right)
        if right.outcome is _NOT_DETECTED:
            return EvalResult(
                outcome=_NOT_DETECTED,
                confidence=right.confidence,
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
        self._inner = require_evaluator(inner, name="inner")

    @property
    def inner(self) -> Evaluator:
        return self._inner

    def __repr__(self) -> str:
        return f"~{self._inner!r}"

    def _absorbing(self) -> tuple[bool, bool]:
        return (not_detected_is_absorbing(self._inner), detected_is_absorbing(self._inner))

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        result = await _run(self._inner, context=context, role="inner")
        if result.outcome is _UNDETERMINED:
            return result
        return EvalResult(
            outcome=_NOT_DETECTED if result.outcome is _DETECTED else _DETECTED,
            confidence=result.confidence,
            evidence=as_text_list(result.evidence),
            rationale=f"NOT ({as_text(result.rationale)})",
            undetermined_operands=merge_undetermined(left=result),
        )
