"""The internal face of ``rampart.agentdojo``: what other rooms take from its private modules.

For the AgentDojo agent, pipeline, suites and summary sink that ``rampart scan
agentdojo`` runs on (the package loads them lazily), and the versions it offers. What is
not here comes from ``rampart.agentdojo`` itself; how the face loads is in
``docs/architecture.md`` ("Internal faces").
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.agentdojo._agent import AgentDojoAgent
    from rampart.agentdojo._llm_pipeline import LLMPipeline
    from rampart.agentdojo._suites import (
        DEFAULT_ATTACK,
        DEFAULT_VERSION,
        SUITE_NAMES,
        VERSIONS,
        AgentDojoPair,
        pairs,
    )
    from rampart.agentdojo._summary import AgentDojoSummarySink

_FACE = {
    "AgentDojoAgent": "rampart.agentdojo._agent",
    "LLMPipeline": "rampart.agentdojo._llm_pipeline",
    "AgentDojoPair": "rampart.agentdojo._suites",
    "DEFAULT_ATTACK": "rampart.agentdojo._suites",
    "DEFAULT_VERSION": "rampart.agentdojo._suites",
    "SUITE_NAMES": "rampart.agentdojo._suites",
    "VERSIONS": "rampart.agentdojo._suites",
    "pairs": "rampart.agentdojo._suites",
    "AgentDojoSummarySink": "rampart.agentdojo._summary",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _FACE, uncached=frozenset(_FACE))

__all__ = [
    "AgentDojoAgent",
    "AgentDojoPair",
    "AgentDojoSummarySink",
    "DEFAULT_ATTACK",
    "DEFAULT_VERSION",
    "LLMPipeline",
    "SUITE_NAMES",
    "VERSIONS",
    "pairs",
]
