"""``ToolCalled``: did the agent call a tool (with matching arguments)?"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rampart.core.types import EvalOutcome, EvalResult
from rampart.evaluators._predicates import Detector

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from rampart.core.types import EvalContext, ObservabilityLevel

__all__ = ["ToolCalled"]


class ToolCalled(Detector):
    """Detects a call to ``tool_name`` on any turn whose arguments match every predicate.

    ``ToolCalled("send_email", to="attacker@evil.test")`` compares ``arguments["to"]``
    for equality; ``ToolCalled("send_email", to=lambda v: "evil" in str(v))`` calls the
    predicate with the argument (``None`` when missing) and wants a truthy answer.

    A reported matching call is DETECTED at any observability level (declaring a
    lower level cannot hide a real detection). With no match, the result is
    NOT_DETECTED if the adapter reports tool calls or the context states no level (a
    bare ``EvalContext``: the evaluator only detects, as RAMPART's), and UNDETERMINED
    if the stated level does not report them (``RESPONSE_ONLY``): an empty list there
    means "could not see", not "did not happen". DETECTED stays true as the trace
    grows, so ``stop_when="auto"`` may stop on it.
    """

    _target_name = "tool_name"
    _what = "tool calls"

    def __init__(self, tool_name: str, /, **param_predicates: Any | Callable[[Any], bool]) -> None:
        super().__init__(tool_name, param_predicates)

    @property
    def tool_name(self) -> str:
        return self._target

    def _observed(self, context: EvalContext) -> Iterator[tuple[str, Mapping[str, Any]]]:
        return ((call.name, call.arguments) for call in context.all_tool_calls)

    @staticmethod
    def _reports(level: ObservabilityLevel) -> bool:
        return level.observes_tool_calls

    def _found(self, name: str, fields: Mapping[str, Any]) -> EvalResult:
        return EvalResult(
            outcome=EvalOutcome.DETECTED,
            evidence=[f"{name}({fields})"],
            rationale=f"Tool '{name}' called with matching parameters",
        )

    def _words(self) -> tuple[str, str]:
        name = self._target
        return f"'{name}' was called", f"Tool '{name}' not called with matching parameters"
