"""``Result``: the single output of every execution, and its verdict vocabulary."""

from __future__ import annotations

import enum
from typing import Any

import attrs

from rampart.core._population import PopulationRef
from rampart.core.types import EvalResult, ObservabilityLevel, TraceEndReason, Turn

__all__ = ["HarmCategory", "InjectionRecord", "Result", "SafetyStatus"]


class SafetyStatus(enum.Enum):
    """The verdict. Only SAFE passes; ERROR is an infrastructure failure, not a finding."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    UNDETERMINED = "undetermined"
    ERROR = "error"


class HarmCategory(enum.StrEnum):
    """Built-in harm labels. Any plain string is accepted wherever a category is."""

    MEMORY_POISONING = "memory_poisoning"
    PROMPT_INJECTION = "prompt_injection"
    JAILBREAK = "jailbreak"
    DATA_EXFILTRATION = "data_exfiltration"
    OVER_PERMISSIVE_ACTION = "over_permissive_action"
    DATA_LEAKAGE = "data_leakage"
    CONTENT_SAFETY = "content_safety"
    HALLUCINATION = "hallucination"
    BEHAVIORAL_REGRESSION = "behavioral_regression"


@attrs.frozen(kw_only=True)
class InjectionRecord:
    """Which payload went to which surface, for reproducing an XPIA run."""

    payload_id: str | None
    surface_name: str


@attrs.frozen(kw_only=True, init=False, repr=False)
class Result:
    """What one execution concluded.

    ``safe`` is derived from ``status`` and ``bool(result) == result.safe``, so
    ``assert result, result.summary`` is the assert pattern. ``safe=`` is still
    accepted by the constructor (the documented manual-recording example) but must
    agree with ``status``. ``final_trace_evaluation`` is evidence for the verdict;
    ``status`` stays authoritative. Missing provenance (``None``) means "not recorded".
    """

    status: SafetyStatus
    summary: str
    observability_level: ObservabilityLevel
    final_trace_evaluation: EvalResult | None
    turns: list[Turn]
    trace_end_reason: TraceEndReason | None
    duration_seconds: float
    harm_category: HarmCategory | str | None
    strategy: str
    injections: list[InjectionRecord]
    population: PopulationRef | None
    metadata: dict[str, Any]

    def __init__(
        self,
        *,
        status: SafetyStatus,
        summary: str,
        safe: bool | None = None,
        observability_level: ObservabilityLevel = ObservabilityLevel.RESPONSE_ONLY,
        final_trace_evaluation: EvalResult | None = None,
        turns: list[Turn] | None = None,
        trace_end_reason: TraceEndReason | None = None,
        duration_seconds: float = 0.0,
        harm_category: HarmCategory | str | None = None,
        strategy: str = "",
        injections: list[InjectionRecord] | None = None,
        population: PopulationRef | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(status, SafetyStatus):
            raise TypeError(f"Result.status must be a SafetyStatus, got {type(status).__name__}")
        if safe is not None and safe is not (status is SafetyStatus.SAFE):
            raise ValueError(
                f"Result.safe={safe!r} contradicts status={status.value!r}: "
                "safe is True exactly when status is SAFE"
            )
        if not isinstance(observability_level, ObservabilityLevel):
            raise TypeError(
                "Result.observability_level must be an ObservabilityLevel, "
                f"got {type(observability_level).__name__}"
            )
        self.__attrs_init__(
            status=status,
            summary=summary,
            observability_level=observability_level,
            final_trace_evaluation=final_trace_evaluation,
            turns=[] if turns is None else turns,
            trace_end_reason=trace_end_reason,
            duration_seconds=duration_seconds,
            harm_category=harm_category,
            strategy=strategy,
            injections=[] if injections is None else injections,
            population=population,
            metadata={} if metadata is None else metadata,
        )

    @property
    def safe(self) -> bool:
        return self.status is SafetyStatus.SAFE

    def __bool__(self) -> bool:
        return self.safe

    @property
    def turn_evaluations(self) -> list[EvalResult]:
        """Online evaluations attached to turns; excludes ``final_trace_evaluation``.

        A fresh list each call, so callers may append to it.
        """
        return [turn.eval_result for turn in self.turns if turn.eval_result is not None]

    def __repr__(self) -> str:
        return f"Result(safe={self.safe}, status={self.status.value}, summary={self.summary!r})"
