"""rampart: pytest-native safety and red-teaming for agentic AI, on structured concurrency.

Strategies, executions, trials and rate limiting are re-exported lazily: ``import
rampart`` loads the value types only, and the engine on first use.
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes
from rampart.core import (
    AdapterContractError,
    AgentAdapter,
    AppManifest,
    BaseEvaluator,
    DataSource,
    DriverError,
    EvalContext,
    EvalOutcome,
    EvalResult,
    EvaluationPurpose,
    Evaluator,
    EvaluatorError,
    HarmCategory,
    InfrastructureError,
    InjectionHandle,
    InjectionRecord,
    ObservabilityLevel,
    Payload,
    PayloadConverter,
    PayloadFormat,
    PopulationRef,
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
    Turn,
)
from rampart.pytest_plugin._collect import TrialInfo, current_trial, record_result

if TYPE_CHECKING:
    from rampart.attacks import Attacks
    from rampart.core.execution import (
        BaseExecution,
        ExecutionEvent,
        ExecutionEventData,
        ExecutionEventHandler,
    )
    from rampart.core.trials import PopulationResult, execute_trials_async
    from rampart.evaluators import TranscriptScope
    from rampart.limits import RateLimitedError, limit
    from rampart.probes import Probes

_LAZY = {
    "Attacks": "rampart.attacks",
    "BaseExecution": "rampart.core.execution",
    "ExecutionEvent": "rampart.core.execution",
    "ExecutionEventData": "rampart.core.execution",
    "ExecutionEventHandler": "rampart.core.execution",
    "PopulationResult": "rampart.core.trials",
    "Probes": "rampart.probes",
    "RateLimitedError": "rampart.limits",
    "TranscriptScope": "rampart.evaluators",
    "execute_trials_async": "rampart.core.trials",
    "limit": "rampart.limits",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY)

__version__ = "0.2.0.dev0"

__all__ = [
    "AdapterContractError",
    "AgentAdapter",
    "AppManifest",
    "Attacks",
    "BaseEvaluator",
    "BaseExecution",
    "DataSource",
    "DriverError",
    "EvalContext",
    "EvalOutcome",
    "EvalResult",
    "EvaluationPurpose",
    "Evaluator",
    "EvaluatorError",
    "ExecutionEvent",
    "ExecutionEventData",
    "ExecutionEventHandler",
    "HarmCategory",
    "InfrastructureError",
    "InjectionHandle",
    "InjectionRecord",
    "ObservabilityLevel",
    "Payload",
    "PayloadConverter",
    "PayloadFormat",
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
    "Turn",
    "current_trial",
    "execute_trials_async",
    "limit",
    "record_result",
]
