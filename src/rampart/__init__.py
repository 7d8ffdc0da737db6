"""rampart: pytest-native safety and red-teaming for agentic AI, on structured concurrency.

The layers, each importing only from those above it in this list:

1. ``rampart.core`` -- the model: value types, verdicts, the protocols user code
   implements (adapter, session, surface, injection handle, driver, evaluator,
   converter), the checks applied where rampart calls that code, and the errors.
   No anyio.
2. ``rampart.codec`` -- the canonical ``rampart.trace.v2`` record codec and its JSON
   Schema (cattrs, loaded on first use).
3. ``rampart.engine`` -- executions on anyio: the session actor that owns the
   adapter's session, the evaluator pipeline that consumes turn events, stop
   policies as cancel scopes, the one error boundary, concurrent trials.
4. ``rampart.strategies`` -- what each strategy declares: its polarity, summary and
   shaping.
5. The extension points, built on the engine: ``attacks`` and ``probes`` (the
   strategies' executions), ``evaluators``, ``drivers``, ``adapters`` (HTTP agents),
   ``limits`` (rate limits, retries, adaptive concurrency), ``llm``.
6. The outputs and the harness: ``reporting`` (sinks, JSON report, JSONL trace),
   ``pytest_plugin``, ``testing`` (simulated and scripted agents, the test server)
   and ``cli``.

Every name is re-exported here lazily (PEP 562): the model's from ``rampart.core``,
and strategies, executions, trials, rate limiting and the result context
(``record_result``, ``current_trial``, ``TrialInfo``: the engine's, set by the pytest
plugin) from their homes. ``import rampart`` loads almost nothing -- the pytest
plugin is a submodule, and pytest loads it in every run -- and each name its module
on first use.
``docs/architecture.md`` draws the same picture with the reasons behind it.
"""

from importlib import import_module as import_module  # lazy exports load through it
from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes
from rampart._redact import redact, register_secret
from rampart._version import __version__ as __version__

if TYPE_CHECKING:
    from rampart.attacks import Attacks
    from rampart.core import (
        AdapterContractError,
        AgentAdapter,
        AppManifest,
        BaseEvaluator,
        ContractError,
        ConverterContractError,
        DataSource,
        DriverContractError,
        DriverError,
        EvalContext,
        EvalOutcome,
        EvalResult,
        EvaluationPurpose,
        Evaluator,
        EvaluatorContractError,
        EvaluatorError,
        HarmCategory,
        InfrastructureError,
        InjectionContractError,
        InjectionHandle,
        InjectionRecord,
        LLMConfig,
        ObservabilityLevel,
        Payload,
        PayloadConverter,
        PayloadFormat,
        Persona,
        PopulationRef,
        PopulationResult,
        PromptDecision,
        PromptDriver,
        Request,
        Response,
        Result,
        SafetyStatus,
        Session,
        SideEffect,
        Surface,
        ToolCall,
        ToolDeclaration,
        TraceEndReason,
        TrialVerdict,
        Turn,
    )
    from rampart.drivers import LLMDriver
    from rampart.engine import (
        BaseExecution,
        ExecutionEvent,
        ExecutionEventData,
        ExecutionEventHandler,
        execute_trials_async,
    )
    from rampart.engine._internal import TrialInfo, current_trial, record_result
    from rampart.evaluators import LLMJudge, TranscriptScope
    from rampart.limits import RateLimitedError, limit
    from rampart.probes import Probes

_LAZY = {
    "Attacks": "rampart.attacks",
    "BaseExecution": "rampart.engine",
    "ExecutionEvent": "rampart.engine",
    "ExecutionEventData": "rampart.engine",
    "ExecutionEventHandler": "rampart.engine",
    "LLMDriver": "rampart.drivers.llm",
    "LLMJudge": "rampart.evaluators",
    "Probes": "rampart.probes",
    "RateLimitedError": "rampart.limits",
    "TranscriptScope": "rampart.evaluators",
    "TrialInfo": "rampart.engine._results",
    "current_trial": "rampart.engine._results",
    "execute_trials_async": "rampart.engine",
    "limit": "rampart.limits",
    "record_result": "rampart.engine._results",
}


__all__ = [
    "AdapterContractError",
    "AgentAdapter",
    "AppManifest",
    "Attacks",
    "BaseEvaluator",
    "BaseExecution",
    "ContractError",
    "ConverterContractError",
    "DataSource",
    "DriverContractError",
    "DriverError",
    "EvalContext",
    "EvalOutcome",
    "EvalResult",
    "EvaluationPurpose",
    "Evaluator",
    "EvaluatorContractError",
    "EvaluatorError",
    "ExecutionEvent",
    "ExecutionEventData",
    "ExecutionEventHandler",
    "HarmCategory",
    "InfrastructureError",
    "InjectionContractError",
    "InjectionHandle",
    "InjectionRecord",
    "LLMConfig",
    "LLMDriver",
    "LLMJudge",
    "ObservabilityLevel",
    "Payload",
    "PayloadConverter",
    "PayloadFormat",
    "Persona",
    "PopulationRef",
    "PopulationResult",
    "Probes",
    "PromptDecision",
    "PromptDriver",
    "RateLimitedError",
    "Request",
    "Response",
    "Result",
    "SafetyStatus",
    "Session",
    "SideEffect",
    "Surface",
    "ToolCall",
    "ToolDeclaration",
    "TraceEndReason",
    "TranscriptScope",
    "TrialInfo",
    "TrialVerdict",
    "Turn",
    "current_trial",
    "execute_trials_async",
    "limit",
    "record_result",
    "redact",
    "register_secret",
]

# Every other exported name is the model's, answered by ``rampart.core`` (itself lazy).
_MODEL_NAMES = [name for name in __all__ if name not in _LAZY and name not in globals()]
# The result context is the engine's (``engine._results``): loaded on first use, and
# read afresh at each access (see ``lazy_attributes``).
__getattr__, __dir__ = lazy_attributes(
    __name__,
    globals(),
    {**dict.fromkeys(_MODEL_NAMES, "rampart.core"), **_LAZY},
    uncached=frozenset({"TrialInfo", "current_trial", "record_result"}),
    submodules=frozenset({"core"}),
)
