"""The model: value types, verdicts, the protocols user code implements, and errors.

Nothing here runs anything: ``rampart.core`` imports no engine, and no anyio at
import time (a test enforces both; ``injection.sleep_until_ready_async`` imports anyio
when it is called). The engine (``rampart.engine``), the record codec
(``rampart.codec``) and everything above them build on these types.

For code written against RAMPART, ``rampart.core`` also answers the engine names
RAMPART exported from it (``BaseExecution``, ``execute_trials_async``,
``run_trace_async``, ...): the first access loads the compatibility module that
forwards it to ``rampart.engine`` (``rampart.core.execution``, ``.trace``,
``.trials``). New code imports them from ``rampart.engine``.

The model's names load on first access too (PEP 562, ``rampart._lazy``): a module that
needs only ``rampart.core.result`` (and the value types it builds on) does not pay for
the protocols, the LLM config or the persona.
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.core._population import PopulationRef
    from rampart.core.adapter import AgentAdapter, Session
    from rampart.core.converter import PayloadConverter
    from rampart.core.driver import PromptDecision, PromptDriver
    from rampart.core.errors import (
        AdapterContractError,
        ContractError,
        ConverterContractError,
        DriverContractError,
        DriverError,
        EvaluatorContractError,
        EvaluatorError,
        FrozenInstanceError,
        InfrastructureError,
        InjectionContractError,
        RampartError,
        SchemaError,
        UnsupportedSchemaVersionError,
    )
    from rampart.core.evaluator import BaseEvaluator, Evaluator
    from rampart.core.execution import (
        BaseExecution,
        ExecutionEvent,
        ExecutionEventData,
        ExecutionEventHandler,
        ExecutionHandlerFactory,
        evaluate_turn_async,
    )
    from rampart.core.injection import InjectionHandle, Surface
    from rampart.core.llm import LLMConfig
    from rampart.core.manifest import AppManifest, DataSource, ToolDeclaration
    from rampart.core.persona import Persona
    from rampart.core.result import (
        HarmCategory,
        InjectionRecord,
        PopulationResult,
        Result,
        SafetyStatus,
        TrialVerdict,
        resolve_as_attack,
        resolve_as_probe,
        resolve_attack_verdict,
        resolve_probe_verdict,
    )
    from rampart.core.trace import (
        EvaluationRecord,
        TraceRun,
        evaluate_final_trace_async,
        evaluate_terminal_async,
        run_trace_async,
    )
    from rampart.core.trials import execute_trials_async
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

# RAMPART-compatible names that belong to the engine (see the module docstring),
# answered through the compatibility modules, the only ones that import the engine.
_ENGINE_NAMES = {
    **dict.fromkeys(
        (
            "BaseExecution",
            "ExecutionEvent",
            "ExecutionEventData",
            "ExecutionEventHandler",
            "ExecutionHandlerFactory",
            "evaluate_turn_async",
        ),
        "rampart.core.execution",
    ),
    **dict.fromkeys(
        (
            "EvaluationRecord",
            "TraceRun",
            "evaluate_final_trace_async",
            "evaluate_terminal_async",
            "run_trace_async",
        ),
        "rampart.core.trace",
    ),
    "execute_trials_async": "rampart.core.trials",
}
_MODEL = {
    "PopulationRef": "rampart.core._population",
    **dict.fromkeys(
        (
            "AgentAdapter",
            "Session",
        ),
        "rampart.core.adapter",
    ),
    "PayloadConverter": "rampart.core.converter",
    **dict.fromkeys(
        (
            "PromptDecision",
            "PromptDriver",
        ),
        "rampart.core.driver",
    ),
    **dict.fromkeys(
        (
            "AdapterContractError",
            "ContractError",
            "ConverterContractError",
            "DriverContractError",
            "DriverError",
            "EvaluatorContractError",
            "EvaluatorError",
            "FrozenInstanceError",
            "InfrastructureError",
            "InjectionContractError",
            "RampartError",
            "SchemaError",
            "UnsupportedSchemaVersionError",
        ),
        "rampart.core.errors",
    ),
    **dict.fromkeys(
        (
            "BaseEvaluator",
            "Evaluator",
        ),
        "rampart.core.evaluator",
    ),
    **dict.fromkeys(
        (
            "InjectionHandle",
            "Surface",
        ),
        "rampart.core.injection",
    ),
    "LLMConfig": "rampart.core.llm",
    **dict.fromkeys(
        (
            "AppManifest",
            "DataSource",
            "ToolDeclaration",
        ),
        "rampart.core.manifest",
    ),
    "Persona": "rampart.core.persona",
    **dict.fromkeys(
        (
            "HarmCategory",
            "InjectionRecord",
            "PopulationResult",
            "Result",
            "SafetyStatus",
            "TrialVerdict",
            "resolve_as_attack",
            "resolve_as_probe",
            "resolve_attack_verdict",
            "resolve_probe_verdict",
        ),
        "rampart.core.result",
    ),
    **dict.fromkeys(
        (
            "EvalContext",
            "EvalOutcome",
            "EvalResult",
            "EvaluationPurpose",
            "ObservabilityLevel",
            "Payload",
            "PayloadFormat",
            "Request",
            "Response",
            "SideEffect",
            "ToolCall",
            "TraceEndReason",
            "Turn",
        ),
        "rampart.core.types",
    ),
}
# ``rampart.core.result`` and the rest stay reachable as attributes after
# ``import rampart.core``, as they were when this package imported them eagerly.
_SUBMODULES = frozenset(module.rpartition(".")[2] for module in _MODEL.values())
__getattr__, __dir__ = lazy_attributes(
    __name__, globals(), {**_MODEL, **_ENGINE_NAMES}, submodules=_SUBMODULES
)

__all__ = [
    "AdapterContractError",
    "AgentAdapter",
    "AppManifest",
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
    "EvaluationRecord",
    "Evaluator",
    "EvaluatorContractError",
    "EvaluatorError",
    "ExecutionEvent",
    "ExecutionEventData",
    "ExecutionEventHandler",
    "ExecutionHandlerFactory",
    "FrozenInstanceError",
    "HarmCategory",
    "InfrastructureError",
    "InjectionContractError",
    "InjectionHandle",
    "InjectionRecord",
    "LLMConfig",
    "ObservabilityLevel",
    "Payload",
    "PayloadConverter",
    "PayloadFormat",
    "Persona",
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
    "TrialVerdict",
    "Turn",
    "UnsupportedSchemaVersionError",
    "evaluate_final_trace_async",
    "evaluate_terminal_async",
    "evaluate_turn_async",
    "execute_trials_async",
    "resolve_as_attack",
    "resolve_as_probe",
    "resolve_attack_verdict",
    "resolve_probe_verdict",
    "run_trace_async",
]
