"""Observability gaps: recording why parts of an evaluation stayed undetermined.

A composite records, one reason per entry in ``EvalResult.undetermined_operands``,
why an operand that ran could not answer. Recording never changes an outcome: a run
can pass with a gap, and its summary names the gap. Strategies use
``gaps_of`` / ``summarize_undetermined`` to write that summary.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice
from typing import cast

from rampart._checks import invalid
from rampart._text import safe_str
from rampart.core.types import EvalOutcome, EvalResult

__all__ = [
    "MAX_TEXT_ENTRIES",
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

MAX_TEXT_ENTRIES = 10_000
"""At most this many entries are read from an evaluator's evidence (or gap) list: an
endless iterator must not hang the run."""


def as_text(value: object) -> str:
    """``value`` as an exact ``str``: ``None`` as ``""``, anything else via ``safe_str``
    (lone surrogates replaced by U+FFFD).

    Third-party evaluators may put any object in ``rationale``; composites must still
    be able to word their own rationale around it, so this never raises (a value whose
    ``str()`` raises reads ``"<unprintable value>"``).
    """
    if type(value) is str:
        return _scalar(value)
    if value is None:
        return ""
    return _scalar(safe_str(value))


def _scalar(text: str) -> str:
    """``text`` with lone surrogates (not Unicode scalar values) replaced by U+FFFD.

    A record holds Unicode scalar values only; a judge's reply decoded with
    ``surrogateescape`` could carry a lone surrogate, which must cost one character,
    not the record.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def as_text_list(value: object) -> list[str]:
    """``value`` as a fresh list of exact strings, never raising.

    ``None`` gives ``[]``; a bare string (or bytes) is one item, never its characters;
    another non-iterable value gives ``[]`` (as RAMPART's ``safe_str_list``: evidence
    is a list of texts, and a lone number or object is not one); an iterable gives
    one item per element (at most ``MAX_TEXT_ENTRIES``; ``None`` reads ``""``), ``[]``
    if iterating raises.
    """
    if type(value) is list:  # the common case, without the generic checks below
        return [as_text(item) for item in value[:MAX_TEXT_ENTRIES]]
    if value is None:
        return []
    if isinstance(value, str | bytes | bytearray):
        return [as_text(value)]
    try:
        iterable = isinstance(value, Iterable)
    except Exception:  # a hostile __class__
        iterable = False
    if not iterable:
        return []
    try:
        items = list(islice(cast("Iterable[object]", value), MAX_TEXT_ENTRIES))
    except Exception:  # an iterator that raises partway
        return []
    return [as_text(item) for item in items]


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
