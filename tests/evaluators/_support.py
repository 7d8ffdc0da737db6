"""Stub evaluators, outcome shorthands and a judge verdict shared by the evaluator tests.

Contexts and turns come from ``tests/_builders.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rampart.core.evaluator import BaseEvaluator
from rampart.core.types import EvalContext, EvalOutcome, EvalResult

if TYPE_CHECKING:
    from collections.abc import Sequence

D = EvalOutcome.DETECTED
ND = EvalOutcome.NOT_DETECTED
U = EvalOutcome.UNDETERMINED
OUTCOMES = (D, ND, U)
SHORT = {D: "D", ND: "ND", U: "U"}


class Stub(BaseEvaluator):
    """Returns a fixed result and counts how often it ran."""

    def __init__(
        self,
        outcome: EvalOutcome,
        *,
        rationale: str = "",
        evidence: Sequence[str] = (),
        confidence: float = 1.0,
        gaps: Sequence[str] = (),
    ) -> None:
        self.result = EvalResult(
            outcome=outcome,
            confidence=confidence,
            evidence=list(evidence),
            rationale=rationale,
            undetermined_operands=list(gaps),
        )
        self.calls = 0

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        self.calls += 1
        return self.result

    def __repr__(self) -> str:
        return f"Stub({SHORT[self.result.outcome]})"


class PlainStub:
    """Implements only the ``Evaluator`` protocol (no operators, not a BaseEvaluator)."""

    def __init__(self, outcome: EvalOutcome, *, rationale: str = "") -> None:
        self.result = EvalResult(outcome=outcome, rationale=rationale)
        self.calls = 0

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        self.calls += 1
        return self.result


class MustNotRun(BaseEvaluator):
    """Fails the test if a short-circuit lets it run."""

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        raise AssertionError("a short-circuited operand was evaluated")


def verdict(outcome: str, *evidence: str) -> dict[str, Any]:
    """A judge model's well-formed verdict reply with ``outcome`` and ``evidence``
    (default ``["e"]``), as the judge tests script it."""
    return {
        "outcome": outcome,
        "confidence": 0.9,
        "rationale": f"Sub-claims scored: {outcome}.",
        "evidence": list(evidence) or ["e"],
    }
