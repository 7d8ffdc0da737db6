"""The wording the strategies' one-line summaries share.

The wording is part of the public contract (terminal lines and reports show it); each
strategy writes its own sentences (``_xpia``, ``_probe``) from these parts. Two
suffixes qualify a verdict:

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
bidi overrides) when it is built (``Strategy.summary`` applies both, see ``_strategy``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.core._internal import as_text, as_text_list, gaps_of, summarize_undetermined
from rampart.core.types import EvalOutcome, TraceEndReason

if TYPE_CHECKING:
    from rampart.core.types import EvalResult

__all__ = [
    "BUDGET_SUFFIX",
    "budget",
    "detail_gaps",
    "evidence",
    "gap_suffix",
    "plain_rationale",
    "rationale",
]

BUDGET_SUFFIX = " (turn budget exhausted)"
_EVIDENCE_SHOWN = 3
_NOT = "NOT ("
_AND = ") AND ("
_OPERAND_PREFIXES = ("Left operand not detected: ", "Right operand not detected: ")


def budget(trace_end_reason: TraceEndReason | None) -> str:
    return BUDGET_SUFFIX if trace_end_reason is TraceEndReason.MAX_TURNS_REACHED else ""


def detail_gaps(evaluation: EvalResult | None) -> str:
    if evaluation is None:
        return ""
    operands = evaluation.undetermined_operands
    if operands == [] and evaluation.outcome is not EvalOutcome.UNDETERMINED:
        return ""  # fully determined: ``gaps_of`` would find no gap (most results)
    return summarize_undetermined(gaps_of(evaluation))


def gap_suffix(evaluation: EvalResult | None) -> str:
    """``", but part of the evaluation was undetermined: <reasons>"``, or ``""``."""
    reasons = detail_gaps(evaluation)
    return f", but part of the evaluation was undetermined: {reasons}" if reasons else ""


def evidence(evaluation: EvalResult | None) -> str:
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


def rationale(evaluation: EvalResult | None) -> str:
    if evaluation is None:
        return ""
    return plain_rationale(as_text(evaluation.rationale))
