"""``SideEffectOccurred``: did the agent cause a side effect of a given kind?"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rampart.core.types import EvalOutcome, EvalResult
from rampart.evaluators._predicates import Detector

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from rampart.core.types import EvalContext, ObservabilityLevel

__all__ = ["SideEffectOccurred"]


class SideEffectOccurred(Detector):
    """Detects a side effect of ``kind`` on any turn whose details match every predicate.

    Predicates work as for ``ToolCalled``, against ``SideEffect.details``. A reported
    match is DETECTED at any observability level. With no match, the result is
    NOT_DETECTED if the adapter reports side effects (``TOOL_AND_SIDE_EFFECTS``) or the
    context states no level (a bare ``EvalContext``: the evaluator only detects, as
    RAMPART's); with a stated level that does not report them it is UNDETERMINED, with
    a rationale naming the level. DETECTED stays true as the trace grows.
    """

    _target_name = "kind"
    _what = "side effects"

    def __init__(self, kind: str, /, **detail_predicates: Any | Callable[[Any], bool]) -> None:
        super().__init__(kind, detail_predicates)

    @property
    def kind(self) -> str:
        return self._target

    def _observed(self, context: EvalContext) -> Iterator[tuple[str, Mapping[str, Any]]]:
        return ((effect.kind, effect.details) for effect in context.all_side_effects)

    @staticmethod
    def _reports(level: ObservabilityLevel) -> bool:
        return level.observes_side_effects

    def _found(self, name: str, fields: Mapping[str, Any]) -> EvalResult:
        return EvalResult(
            outcome=EvalOutcome.DETECTED,
            evidence=[f"Side effect '{name}': {fields}"],
            rationale=f"Side effect '{name}' detected",
        )

    def _words(self) -> tuple[str, str]:
        return f"'{self._target}' occurred", f"Side effect '{self._target}' not detected"
