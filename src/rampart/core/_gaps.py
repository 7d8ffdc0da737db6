"""Observability gaps: recording why parts of an evaluation stayed undetermined.

A composite records, one reason per entry in ``EvalResult.undetermined_operands``,
why an operand that ran could not answer. Recording never changes an outcome: a run
can pass with a gap, and its summary names the gap. Strategies use
``gaps_of`` / ``summarize_undetermined`` to write that summary.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rampart._checks import invalid
from rampart.core.types import EvalOutcome, EvalResult

__all__ = [
    "NO_REASON_GIVEN",
    "as_text",
    "as_text_list",
    "gaps_of",
    "merge_undetermined",
    "summarize_undetermined",
]

# An UNDETERMINED operand that says nothing still leaves a gap; an empty string would
# read as "nothing was undetermined" everywhere downstream, so a fixed phrase stands in.
NO_REASON_GIVEN = "an operand gave no reason"

# How many reasons a summary names before it only counts the rest.
_NAMED_REASONS = 2


def as_text(value: object) -> str:
    """``value`` as text: a ``str`` as is, ``None`` as ``""``, anything else via ``str()``.

    Third-party evaluators may put any object in ``rationale``; composites must still
    be able to word their own rationale around it.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return str(value)


def as_text_list(value: object) -> list[str]:
    """``value`` as a fresh list of strings; a bare string is one item, ``None`` none."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable):
        return [as_text(item) for item in value]
    return [as_text(value)]


def _distinct(reasons: Iterable[str]) -> list[str]:
    stripped = (reason.strip() for reason in reasons)
    return list(dict.fromkeys(reason for reason in stripped if reason))


def merge_undetermined(*, left: EvalResult, right: EvalResult | None = None) -> list[str]:
    """The distinct reasons the operands that ran carry, left first.

    An operand that already carries reasons contributes those (they name the
    evaluators that could not answer, however deep in the tree). One that came back
    UNDETERMINED carrying none contributes its stripped rationale, or
    ``NO_REASON_GIVEN`` when it has none. ``right`` is ``None`` when the left operand
    short-circuited: a skipped operand is never recorded.
    """
    reasons: list[str] = []
    for operand in (left, right):
        if operand is None:
            continue
        carried = _distinct(as_text_list(operand.undetermined_operands))
        if carried:
            reasons.extend(carried)
        elif operand.outcome is EvalOutcome.UNDETERMINED:
            reasons.append(as_text(operand.rationale).strip() or NO_REASON_GIVEN)
    return list(dict.fromkeys(reasons))


def gaps_of(*evaluations: EvalResult | None) -> list[str]:
    """The distinct observability gaps of the given evaluations, in first-seen order.

    Each evaluation contributes the reasons in its ``undetermined_operands``; an
    UNDETERMINED evaluation that carries none (a single built-in evaluator that could
    not see its channel) contributes its rationale instead. ``None`` entries (no
    evaluation) are skipped. An UNDETERMINED evaluation with neither reasons nor a
    rationale contributes nothing, so the caller's own fallback wording applies.
    """
    reasons: list[str] = []
    for evaluation in evaluations:
        if evaluation is None:
            continue
        carried = _distinct(as_text_list(evaluation.undetermined_operands))
        if carried:
            reasons.extend(carried)
        elif evaluation.outcome is EvalOutcome.UNDETERMINED:
            reasons.extend(_distinct([as_text(evaluation.rationale)]))
    return list(dict.fromkeys(reasons))


def summarize_undetermined(reasons: Sequence[str]) -> str:
    """One line naming the gaps: ``"a; b (and N more)"``.

    Reasons are stripped, blanks dropped, repeats collapsed (first-seen order); the
    first two are named and the rest counted. No reasons gives ``""``.
    """
    if isinstance(reasons, str):
        raise invalid(
            "summarize_undetermined", "reasons", "a sequence of str, not a single str", reasons
        )
    distinct = _distinct(as_text(reason) for reason in reasons)
    named = "; ".join(distinct[:_NAMED_REASONS])
    rest = len(distinct) - _NAMED_REASONS
    if rest > 0:
        return f"{named} (and {rest} more)"
    return named
