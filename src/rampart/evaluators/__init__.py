"""Built-in evaluators and temporal scopes.

``ToolCalled``, ``SideEffectOccurred`` and ``ResponseContains`` detect what an agent
did or said; compose them (and your own ``BaseEvaluator`` subclasses) with ``|``,
``&`` and ``~``. See ``docs/evaluators.md``.
"""

from rampart.evaluators._response_contains import ResponseContains
from rampart.evaluators._scope import ResponseScope, TranscriptScope
from rampart.evaluators._side_effect import SideEffectOccurred
from rampart.evaluators._tool_called import ToolCalled

__all__ = [
    "ResponseContains",
    "ResponseScope",
    "SideEffectOccurred",
    "ToolCalled",
    "TranscriptScope",
]
