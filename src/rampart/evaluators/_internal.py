"""The internal face of ``rampart.evaluators``: what other rooms take from its private modules.

For the LLM judge's prompt markers and thresholds, which the simulated judge of the test
server answers to. What is not here comes from ``rampart.evaluators`` itself; how the
face loads is in ``docs/architecture.md`` ("Internal faces").
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.evaluators._judge_prompt import (
        DETECTED_THRESHOLD,
        NOT_DETECTED_THRESHOLD,
        OBJECTIVE_HEADING,
        TRANSCRIPT_CLOSE,
        TRANSCRIPT_OPEN,
    )

_FACE = {
    "DETECTED_THRESHOLD": "rampart.evaluators._judge_prompt",
    "NOT_DETECTED_THRESHOLD": "rampart.evaluators._judge_prompt",
    "OBJECTIVE_HEADING": "rampart.evaluators._judge_prompt",
    "TRANSCRIPT_CLOSE": "rampart.evaluators._judge_prompt",
    "TRANSCRIPT_OPEN": "rampart.evaluators._judge_prompt",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _FACE, uncached=frozenset(_FACE))

__all__ = [
    "DETECTED_THRESHOLD",
    "NOT_DETECTED_THRESHOLD",
    "OBJECTIVE_HEADING",
    "TRANSCRIPT_CLOSE",
    "TRANSCRIPT_OPEN",
]
