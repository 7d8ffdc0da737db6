"""Built-in evaluators, temporal scopes and the LLM judge.

``ToolCalled``, ``SideEffectOccurred`` and ``ResponseContains`` detect what an agent
did or said; ``LLMJudge`` asks a language model whether an objective was met. Compose
them (and your own ``BaseEvaluator`` subclasses) with ``|``, ``&`` and ``~``. See
``docs/evaluators.md`` and ``docs/llm.md``. ``LLMJudge`` loads on first access (it
brings in the LLM client and the rate limiter).
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes
from rampart.evaluators._response_contains import ResponseContains
from rampart.evaluators._scope import ResponseScope, TranscriptScope
from rampart.evaluators._side_effect import SideEffectOccurred
from rampart.evaluators._tool_called import ToolCalled
from rampart.evaluators.personas import NEUTRAL_EVALUATOR

if TYPE_CHECKING:
    from rampart.evaluators._llm_judge import LLMJudge

__getattr__, __dir__ = lazy_attributes(
    __name__, globals(), {"LLMJudge": "rampart.evaluators._llm_judge"}
)

__all__ = [
    "LLMJudge",
    "NEUTRAL_EVALUATOR",
    "ResponseContains",
    "ResponseScope",
    "SideEffectOccurred",
    "ToolCalled",
    "TranscriptScope",
]
