"""The one-line summaries the built-in strategies write on their results.

The wording is part of the public contract (terminal lines and reports show it), so
it lives in one place. Two suffixes qualify a verdict:

* the **gap suffix** ``", but part of the evaluation was undetermined: <reasons>"``
  on a SAFE result reached while part of the evaluation could not see its channel;
* the **budget suffix** ``" (turn budget exhausted)"`` when the trace ended because
  ``max_turns`` was spent (SAFE, UNSAFE and UNDETERMINED results).

A summary states what the evaluators *found*. Composite rationales keep RAMPART's
format on ``EvalResult`` (``"NOT (...)"``, ``"(l) AND (r)"``, ``"Left operand not
detected: ..."``), but there the connectives decide the outcome, they do not change the
facts: ``~ResponseContains(secret)`` passes with the rationale ``"NOT (No response
contains the target pattern)"``, and what was found is that no response contains it.
So a summary shows :func:`plain_rationale`: the findings with the connectives taken
off, a conjunction's findings joined with ``"; "``. A failing probe also names its
evidence (which turn), in parentheses.

Evidence and rationales quote what the agent and evaluators wrote, and a summary is
what ``assert result, result.summary`` prints: every summary is redacted
(``rampart.redact``) and terminal-safe (no escape sequences, control characters or
bidi overrides) when it is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart._redact import redact
from rampart._text import terminal_safe
from rampart.core._gaps import as_text, as_text_list, gaps_of, summarize_undetermined
from rampart.core.result import SafetyStatus
from rampart.core.types import EvalOutcome, TraceEndReason

if TYPE_CHECKING:
    from rampart.core.types import EvalResult

__all__ = ["BUDGET_SUFFIX", "gap_suffix", "plain_rationale", "probe_summary", "xpia_summary"]

BUDGET_SUFFIX = " (turn budget exhausted)"
_EVIDENCE_SHOWN = 3
_NOT = "NOT ("
_AND = ") AND ("
_OPERAND_PREFIXES = ("Left operand not detected: ", "Right operand not detected: ")


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


def _closing(text: str, start: int) -> int:
    """The index of the ``)`` matching the ``(`` at ``start``, or -1."""
    depth = 0
    for index in range(start, len(text)):
        char = text[index]
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index
    return -1


def plain_rationale(text: str) -> str:
    """A composite rationale as the findings it is made of (see the module docstring).

    ``"NOT (x)"`` and ``"Left/Right operand not detected: x"`` read as ``x``;
    ``"(l) AND (r)"`` as ``"l; r"``, recursively. Text that is not exactly one of those
    forms (a third-party rationale with its own parentheses) is returned stripped.
    """
    text = text.strip()
    for prefix in _OPERAND_PREFIXES:
        if text.startswith(prefix):
            return plain_rationale(text[len(prefix) :])
    if text.startswith(_NOT) and _closing(text, len(_NOT) - 1) == len(text) - 1:
        inner = text[len(_NOT) : -1]
        return plain_rationale(inner) if inner.strip() else text
    if text.startswith("(") and text.endswith(")"):
        left_end = _closing(text, 0)
        right_start = left_end + len(_AND) - 1
        if (
            left_end > 0
            and text.startswith(_AND, left_end)
            and _closing(text, right_start) == len(text) - 1
        ):
            left = plain_rationale(text[1:left_end])
            right = plain_rationale(text[right_start + 1 : -1])
            return "; ".join(part for part in (left, right) if part)
    return text


def _rationale(evaluation: EvalResult | None) -> str:
    if evaluation is None:
        return ""
    return plain_rationale(as_text(evaluation.rationale))


def _safe(summary: str) -> str:
    return redact(terminal_safe(summary))


def xpia_summary(
    *,
    status: SafetyStatus,
    evaluation: EvalResult | None,
    trace_end_reason: TraceEndReason | None,
    withheld: str = "",
) -> str:
    """The XPIA result summary for ``status``.

    ``withheld`` is why a SAFE verdict was turned into UNDETERMINED (no payload reached
    the agent, an unobserved turn); an UNDETERMINED summary says that first.
    """
    budget = _budget(trace_end_reason)
    if status is SafetyStatus.SAFE:
        return _safe(f"Agent defended successfully{gap_suffix(evaluation)}{budget}")
    if status is SafetyStatus.UNSAFE:
        detail = _evidence(evaluation) or _rationale(evaluation)
        return _safe(f"Attack objective detected{': ' + detail if detail else ''}{budget}")
    if status is SafetyStatus.UNDETERMINED:
        detail = withheld or _gaps(evaluation) or "Insufficient observability"
        return _safe(f"Evaluation undetermined: {detail}{budget}")
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
    withheld: str = "",
) -> str:
    """The behavioural-probe result summary for ``status`` (``withheld``: see ``xpia_summary``)."""
    budget = _budget(trace_end_reason)
    if status is SafetyStatus.SAFE:
        detail = _evidence(evaluation) or _rationale(evaluation)
        return _safe(
            f"Expected behavior detected{': ' + detail if detail else ''}"
            f"{gap_suffix(evaluation)}{budget}"
        )
    if status is SafetyStatus.UNSAFE:
        detail = _rationale(evaluation) or "Expected behavior not detected"
        evidence = _evidence(evaluation)
        if evidence:
            detail += f" ({evidence})"
        return _safe(f"UNSAFE: {detail}{budget}")
    if status is SafetyStatus.UNDETERMINED:
        detail = (
            withheld or _gaps(evaluation) or "Could not determine if expected behavior occurred"
        )
        return _safe(f"UNDETERMINED: {detail}{budget}")
    detail = _rationale(evaluation)
    if detail:
        return _safe(f"ERROR: {detail}{budget}")
    if trace_end_reason is TraceEndReason.DRIVER_EXHAUSTED:
        return "ERROR: Driver produced no turns"
    if trace_end_reason is TraceEndReason.MAX_TURNS_REACHED:
        return "ERROR: Turn budget exhausted before the agent was exercised"
    return "ERROR: Probe produced no evaluable trace"
