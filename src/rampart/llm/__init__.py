"""The LLM layer: one rate-limited, cached chat client, and re-judging saved traces.

``LLMClient`` talks to OpenAI-compatible endpoints (OpenAI, vLLM, Ollama, LiteLLM, the
test server) and Azure OpenAI over httpx, sharing its HTTP code with
``rampart.adapters.ChatCompletionsAdapter``. Every call goes through a
``rampart.limits`` limiter, so a judge or attacker model is paced like the agent
under test, and may share the agent's budget. An opt-in on-disk ``ResponseCache``
answers repeated calls. ``rescore_records`` re-evaluates saved ``rampart.trace.v2``
records with a new evaluator, without calling the agent.

The components built on it live with their kind: ``rampart.evaluators.LLMJudge``,
``rampart.drivers.LLMDriver``, ``rampart.payloads.Payloads``. See ``docs/llm.md``.
"""

from rampart.llm._cache import (
    LLM_CACHE_ENV,
    CachedCompletion,
    ResponseCache,
    configure_cache,
    default_cache,
    reset_cache_configuration,
)
from rampart.llm._client import (
    CacheSetting,
    Completion,
    LLMClient,
    LLMToolCall,
    as_client,
    shared_client,
)
from rampart.llm._endpoint import DEFAULT_AZURE_API_VERSION, Endpoint, resolve_endpoint
from rampart.llm._rescore import Polarity, read_trace_records, rescore_records, rescore_result
from rampart.llm._stats import LLMStatistics, llm_statistics

__all__ = [
    "CacheSetting",
    "CachedCompletion",
    "Completion",
    "DEFAULT_AZURE_API_VERSION",
    "Endpoint",
    "LLMClient",
    "LLMStatistics",
    "LLMToolCall",
    "LLM_CACHE_ENV",
    "Polarity",
    "ResponseCache",
    "as_client",
    "configure_cache",
    "default_cache",
    "llm_statistics",
    "read_trace_records",
    "rescore_records",
    "rescore_result",
    "reset_cache_configuration",
    "resolve_endpoint",
    "shared_client",
]
