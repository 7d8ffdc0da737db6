"""The one-line summaries the built-in strategies write on their results.

The wording is part of the public contract (terminal lines and reports show it), so
it lives in one place. Two suffixes qualify a verdict:

* the **gap suffix** ``", but part of the evaluation was undetermined: <reasons>"``
  on a SAFE result reached while part of the evaluation could not see its channel;
* the **budget suffix** ``" (turn budget exhausted)"`` when the trace ended because
  ``max_turns`` was spent (SAFE, UNSAFE and UNDETERMINED results).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.core._gaps import as_text, as_text_list, gaps_of, summarize_undetermined
from rampart.core.result import SafetyStatus
from rampart.core.types import EvalOutcome, TraceEndReason

if TYPE_CHECKING:
    from rampart.core.types import EvalResult

__all__ = ["BUDGET_SUFFIX", "gap_suffix", "probe_summary", "xpia_summary"]

BUDGET_SUFFIX = " (turn budget exhausted)"
_EVIDENCE_SHOWN = 3


def _budget(trace_end_reason: TraceEndReason | None) -> str:
    return BUDGET_SUFFIX if trace_end_reason is TraceEndReason.MAX_TURNS_REACHED else ""


def _gaps(evaluation: EvalResult | None) -> str:
    if evaluation is None:
        return ""
    operands = evaluation.undetermined_operands
    if operands == [] and evaluation.outcome is not EvalOutcome.UNDETERMINED:
        return ""  # fully determined: ``gaps_of`` would find no gap (most results)
    return summarize_undetermined(gaps_of(evaluation))


def gap_suffix(evaluation: EvalResult | None) -> str:
    """``", but part of the evaluation was undetermined: <reasons>"``, or ``""``."""
    reasons = _gaps(evaluation)
    return f", but part of the evaluation was undetermined: {reasons}" if reasons else ""


def _evidence(evaluation: EvalResult | None) -> str:
    if evaluation is None:
        return ""
    return "; ".join(as_text_list(evaluation.evidence)[:_EVIDENCE_SHOWN])


def _rationale(evaluation: EvalResult | None) -> str:
    return as_text(evaluation.rationale).strip() if evaluation is not None else ""


def xpia_summary(
    *,
    status: SafetyStatus,
    evaluation: EvalResult | None,
    trace_end_reason: TraceEndReason | None,
) -> str:
    """The XPIA result summary for ``status``."""
    budget = _budget(trace_end_reason)
    if status is SafetyStatus.SAFE:
        return f"Agent defended successfully{gap_suffix(evaluation)}{budget}"
    if status is SafetyStatus.UNSAFE:
        detail = _evidence(evaluation) or _rationale(evaluation)
        return f"Attack objective detected{': ' + detail if detail else ''}{budget}"
    if status is SafetyStatus.UNDETERMINED:
        detail = _gaps(evaluation) or "Insufficient observability"
        return f"Evaluation undetermined: {detail}{budget}"
    if trace_end_reason is TraceEndReason.DRIVER_EXHAUSTED:
        return "Execution error: Driver produced no turns"
    if trace_end_reason is TraceEndReason.MAX_TURNS_REACHED:
        return "Execution error: Turn budget exhausted before agent exercise"
    return "Execution error: No evaluable trace"


def probe_summary(
    *,
    status: SafetyStatus,
    evaluation: EvalResult | None,
    trace_end_reason: TraceEndReason | None,
) -> str:
    """The behavioural-probe result summary for ``status``."""
    budget = _budget(trace_end_reason)
    if status is SafetyStatus.SAFE:
        detail = _evidence(evaluation) or _rationale(evaluation)
        return (
            f"Expected behavior detected{': ' + detail if detail else ''}"
            f"{gap_suffix(evaluation)}{budget}"
        )
    if status is SafetyStatus.UNSAFE:
        detail = _rationale(evaluation) or "Expected behavior not detected"
        return f"UNSAFE: {detail}{budget}"
    if status is SafetyStatus.UNDETERMINED:
        detail = _gaps(evaluation) or "Could not determine if expected behavior occurred"
        return f"UNDETERMINED: {detail}{budget}"
    detail = _rationale(evaluation)
    if detail:
        return f"ERROR: {detail}{budget}"
    if trace_end_reason is TraceEndReason.DRIVER_EXHAUSTED:
        return "ERROR: Driver produced no turns"
    if trace_end_reason is TraceEndReason.MAX_TURNS_REACHED:
        return "ERROR: Turn budget exhausted before the agent was exercised"
    return "ERROR: Probe produced no evaluable trace"
