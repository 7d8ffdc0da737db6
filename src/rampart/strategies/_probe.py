"""The behavioural probe's declaration: probe polarity, its summary, its SAFE guard.

DETECTED means the expected behaviour happened (SAFE). A SAFE verdict is withheld
(UNDETERMINED) for any reason the execution gives (an unobserved turn); there is no
observability adjustment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rampart.core._internal import Polarity
from rampart.core.types import SafetyStatus, TraceEndReason
from rampart.strategies._shaping import withhold_safe
from rampart.strategies._strategy import Strategy
from rampart.strategies._wording import budget, detail_gaps, evidence, gap_suffix, rationale

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.core.types import EvalResult, ObservabilityLevel, Turn

__all__ = ["PROBE", "probe_summary"]


def probe_summary(
    *,
    status: SafetyStatus,
    evaluation: EvalResult | None,
    trace_end_reason: TraceEndReason | None,
    withheld: str = "",
) -> str:
    """The behavioural-probe result summary for ``status`` (``withheld``: see ``xpia_summary``)."""
    suffix = budget(trace_end_reason)
    if status is SafetyStatus.SAFE:
        detail = evidence(evaluation) or rationale(evaluation)
        return (
            f"Expected behavior detected{': ' + detail if detail else ''}"
            f"{gap_suffix(evaluation)}{suffix}"
        )
    if status is SafetyStatus.UNSAFE:
        detail = rationale(evaluation) or "Expected behavior not detected"
        found = evidence(evaluation)
        if found:
            detail += f" ({found})"
        return f"UNSAFE: {detail}{suffix}"
    if status is SafetyStatus.UNDETERMINED:
        detail = (
            withheld
            or detail_gaps(evaluation)
            or "Could not determine if expected behavior occurred"
        )
        return f"UNDETERMINED: {detail}{suffix}"
    detail = rationale(evaluation)
    if detail:
        return f"ERROR: {detail}{suffix}"
    if trace_end_reason is TraceEndReason.DRIVER_EXHAUSTED:
        return "ERROR: Driver produced no turns"
    if trace_end_reason is TraceEndReason.MAX_TURNS_REACHED:
        return "ERROR: Turn budget exhausted before the agent was exercised"
    return "ERROR: Probe produced no evaluable trace"


def _shape(
    status: SafetyStatus,
    *,
    observability_level: ObservabilityLevel,
    turns: Sequence[Turn],
    reasons: Sequence[str],
    metadata: dict[str, Any],
) -> SafetyStatus:
    del observability_level, turns  # a probe's verdict does not depend on them
    return withhold_safe(status, reasons, metadata)


PROBE = Strategy(name="probe", polarity=Polarity.PROBE, summary=probe_summary, shaping=_shape)
