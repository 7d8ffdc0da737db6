"""AgentDojo's injection suites as rampart attacks (the optional ``agentdojo`` extra).

``pairs("banking")`` lists a suite's (user task, injection task) pairs;
``AgentDojoAgent(pipeline).run(pair)`` attacks one with AgentDojo's own attack,
runs the pipeline (any AgentDojo pipeline, or ``LLMPipeline``: an OpenAI-compatible
model through ``rampart.llm``) on AgentDojo's environment and tools, and judges it
with AgentDojo's own checks (``Result.metadata["agentdojo"]``). See ``docs/agentdojo.md``.
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.agentdojo._agent import AgentDojoAgent
    from rampart.agentdojo._evaluators import InjectionTaskSucceeded, UserTaskSucceeded
    from rampart.agentdojo._llm_pipeline import LLMPipeline
    from rampart.agentdojo._pytest import parametrize_pairs
    from rampart.agentdojo._suites import (
        DEFAULT_ATTACK,
        DEFAULT_VERSION,
        SUITE_NAMES,
        AgentDojoPair,
        load_attack,
        load_suite,
        pairs,
    )
    from rampart.agentdojo._summary import AgentDojoSummary, AgentDojoSummarySink, summarise
    from rampart.agentdojo._target import PairTarget, VectorHandle

# Lazy, so that ``rampart scan agentdojo`` reads its settings
# (``rampart.scan._agentdojo_config``, ``_suites``) without importing AgentDojo: only
# the scan's pytest run imports it (seconds: it loads every model SDK), once.
__getattr__, __dir__ = lazy_attributes(
    __name__,
    globals(),
    {
        "AgentDojoAgent": "rampart.agentdojo._agent",
        "AgentDojoPair": "rampart.agentdojo._suites",
        "AgentDojoSummary": "rampart.agentdojo._summary",
        "AgentDojoSummarySink": "rampart.agentdojo._summary",
        "DEFAULT_ATTACK": "rampart.agentdojo._suites",
        "DEFAULT_VERSION": "rampart.agentdojo._suites",
        "InjectionTaskSucceeded": "rampart.agentdojo._evaluators",
        "LLMPipeline": "rampart.agentdojo._llm_pipeline",
        "PairTarget": "rampart.agentdojo._target",
        "SUITE_NAMES": "rampart.agentdojo._suites",
        "UserTaskSucceeded": "rampart.agentdojo._evaluators",
        "VectorHandle": "rampart.agentdojo._target",
        "load_attack": "rampart.agentdojo._suites",
        "load_suite": "rampart.agentdojo._suites",
        "pairs": "rampart.agentdojo._suites",
        "parametrize_pairs": "rampart.agentdojo._pytest",
        "summarise": "rampart.agentdojo._summary",
    },
)

__all__ = [
    "AgentDojoAgent",
    "AgentDojoPair",
    "AgentDojoSummary",
    "AgentDojoSummarySink",
    "DEFAULT_ATTACK",
    "DEFAULT_VERSION",
    "InjectionTaskSucceeded",
    "LLMPipeline",
    "PairTarget",
    "SUITE_NAMES",
    "UserTaskSucceeded",
    "VectorHandle",
    "load_attack",
    "load_suite",
    "pairs",
    "parametrize_pairs",
    "summarise",
]
