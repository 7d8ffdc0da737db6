"""``SideEffectOccurred``: did the agent cause a side effect of a given kind?"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from rampart._checks import check_text
from rampart.core.evaluator import BaseEvaluator
from rampart.core.types import EvalOutcome, EvalResult
from rampart.evaluators._predicates import matches_all, observed, render_call

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from rampart.core.types import EvalContext

__all__ = ["SideEffectOccurred"]


class SideEffectOccurred(BaseEvaluator):
    """Detects a side effect of ``kind`` on any turn whose details match every predicate.

    Predicates work as for ``ToolCalled``, against ``SideEffect.details``. A reported
    match is DETECTED at any observability level. With no match, the result is
    NOT_DETECTED if the adapter reports side effects (``TOOL_AND_SIDE_EFFECTS``) or the
    context states no level (a bare ``EvalContext``: the evaluator only detects, as
    RAMPART's); with a stated level that does not report them it is UNDETERMINED, with
    a rationale naming the level. DETECTED stays true as the trace grows.
    """

    _detected_absorbing: ClassVar[bool] = True

    def __init__(self, kind: str, /, **detail_predicates: Any | Callable[[Any], bool]) -> None:
        self._kind = check_text("SideEffectOccurred", "kind", kind)
        self._predicates: Mapping[str, Any] = MappingProxyType(dict(detail_predicates))

    @property
    def kind(self) -> str:
        return self._kind

    @property
    def predicates(self) -> Mapping[str, Any]:
        """Detail key to expected value or predicate (read-only)."""
        return self._predicates

    def __repr__(self) -> str:
        return f"SideEffectOccurred({render_call(self._kind, self._predicates)})"

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        def find() -> EvalResult | None:
            for effect in context.all_side_effects:
                if effect.kind == self._kind and matches_all(effect.details, self._predicates):
                    return EvalResult(
                        outcome=EvalOutcome.DETECTED,
                        evidence=[f"Side effect '{effect.kind}': {effect.details}"],
                        rationale=f"Side effect '{effect.kind}' detected",
                    )
            return None

        return observed(
            "SideEffectOccurred",
            context,
            find,
            reports=lambda level: level.observes_side_effects,
            what="side effects",
            question=f"'{self._kind}' occurred",
            absent=f"Side effect '{self._kind}' not detected",
        )
