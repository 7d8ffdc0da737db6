"""AgentDojo's injection suites as rampart attacks (the optional ``agentdojo`` extra).

``pairs("banking")`` lists a suite's (user task, injection task) pairs;
``AgentDojoAgent(pipeline).run(pair)`` attacks one with AgentDojo's own attack,
runs the pipeline (any AgentDojo pipeline, or ``LLMPipeline``: an OpenAI-compatible
model through ``rampart.llm``) on AgentDojo's environment and tools, and judges it
with AgentDojo's own checks (``Result.metadata["agentdojo"]``). See ``docs/agentdojo.md``.
"""

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
