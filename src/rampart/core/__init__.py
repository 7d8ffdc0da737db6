"""The core model and contracts: value types, verdicts, protocols and errors.

The execution machinery (``BaseExecution``, the trace runner, trials, verdict helpers)
is re-exported lazily, so importing the model does not import the engine.
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes
from rampart.core._population import PopulationRef
from rampart.core.adapter import AgentAdapter, Session
from rampart.core.converter import PayloadConverter
from rampart.core.driver import PromptDecision, PromptDriver
from rampart.core.errors import (
    AdapterContractError,
    DriverError,
    EvaluatorError,
    InfrastructureError,
    RampartError,
    SchemaError,
    UnsupportedSchemaVersionError,
)
from rampart.core.evaluator import BaseEvaluator, Evaluator
from rampart.core.injection import InjectionHandle, Surface
from rampart.core.manifest import AppManifest, DataSource, ToolDeclaration
from rampart.core.result import HarmCategory, InjectionRecord, Result, SafetyStatus
from rampart.core.types import (
    EvalContext,
    EvalOutcome,
    EvalResult,
    EvaluationPurpose,
    ObservabilityLevel,
    Payload,
    PayloadFormat,
    Request,
    Response,
    SideEffect,
    ToolCall,
    TraceEndReason,
    Turn,
)

if TYPE_CHECKING:
    from rampart.core._verdicts import resolve_attack_verdict, resolve_probe_verdict
    from rampart.core.execution import (
        BaseExecution,
        ExecutionEvent,
        ExecutionEventData,
        ExecutionEventHandler,
    )
    from rampart.core.trace import (
        EvaluationRecord,
        TraceRun,
        evaluate_final_trace_async,
        run_trace_async,
    )
    from rampart.core.trials import PopulationResult, execute_trials_async

_LAZY = {
    "BaseExecution": "rampart.core.execution",
    "EvaluationRecord": "rampart.core.trace",
    "ExecutionEvent": "rampart.core.execution",
    "ExecutionEventData": "rampart.core.execution",
    "ExecutionEventHandler": "rampart.core.execution",
    "PopulationResult": "rampart.core.trials",
    "TraceRun": "rampart.core.trace",
    "evaluate_final_trace_async": "rampart.core.trace",
    "execute_trials_async": "rampart.core.trials",
    "resolve_attack_verdict": "rampart.core._verdicts",
    "resolve_probe_verdict": "rampart.core._verdicts",
    "run_trace_async": "rampart.core.trace",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY)

__all__ = [
    "AdapterContractError",
    "AgentAdapter",
    "AppManifest",
    "BaseEvaluator",
    "BaseExecution",
    "DataSource",
    "DriverError",
    "EvalContext",
    "EvalOutcome",
    "EvalResult",
    "EvaluationPurpose",
    "EvaluationRecord",
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
    "PromptDecision",
    "PromptDriver",
    "RampartError",
    "Request",
    "Response",
    "Result",
    "SafetyStatus",
    "SchemaError",
    "Session",
    "SideEffect",
    "Surface",
    "ToolCall",
    "ToolDeclaration",
    "TraceEndReason",
    "TraceRun",
    "Turn",
    "UnsupportedSchemaVersionError",
    "evaluate_final_trace_async",
    "execute_trials_async",
    "resolve_attack_verdict",
    "resolve_probe_verdict",
    "run_trace_async",
]
