"""How the report states a trial group: its entry, and what the group line says.

``group_entry`` states a model ``TrialGroupOutcome`` as the report's
``TrialGroupSummary``: the one builder of a group entry, for the pytest plugin (live)
and ``rampart report`` / ``diff`` (rebuilt from saved records).

``group_description`` is the bracketed part of the group line (counts, pass rate,
threshold, interval, and how the verdict was reached); ``group_reason`` says on one
line why a group did not pass. Both read only the summary's counts and rule, so the
pytest plugin (from the verdict it just computed), the JUnit properties, the trial
failure message and ``rampart report`` (from a saved report or trace) all print the
same words for the same group.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import attrs

from rampart.core._internal import percent
from rampart.reporting._run_data import INCOMPLETE, TrialGroupSummary

if TYPE_CHECKING:
    from rampart.core._internal import TrialGroupOutcome

__all__ = ["group_description", "group_entry", "group_reason"]


def group_entry(
    outcome: TrialGroupOutcome,
    *,
    nodeid: str,
    test_name: str,
    harm_category: str | None = None,
    worker: str | None = None,
) -> TrialGroupSummary:
    """The report's statement of a group's ``outcome``, with the run's facts about it.

    The one place a group entry is made, live or rebuilt. Its ``reason`` is what
    ``group_reason`` says of it; an INCOMPLETE group's reason is what was missing.
    """
    rule = outcome.rule
    stated = TrialGroupSummary(
        nodeid=nodeid,
        test_name=test_name,
        harm_category=harm_category,
        n=outcome.n,
        threshold=rule.threshold,
        counts=outcome.counts,
        executed=outcome.executed,
        not_run=outcome.not_run,
        pass_rate=outcome.pass_rate,
        interval=outcome.interval,
        verdict=INCOMPLETE if outcome.verdict is None else outcome.verdict.value,
        population_status=outcome.status.value,
        reason=outcome.missing,
        early_stopped=outcome.early_stopped,
        confidence=rule.confidence,
        max_unsafe=rule.max_unsafe,
        sequential=rule.sequential,
        not_counted=outcome.not_counted,
        not_counted_unsafe=outcome.not_counted_unsafe,
        worker=worker,
        concurrency=outcome.concurrency,
        interrupted=outcome.interrupted,
    )
    if outcome.verdict is None:
        return stated
    reason = group_reason(stated)
    if outcome.interrupted and reason is not None:  # a finding in a group cut short
        from rampart.core._internal import interruption

        counts = interruption(n=outcome.n, ran=outcome.executed, not_run=outcome.not_run)
        reason = f"{reason}; {counts}"
    return attrs.evolve(stated, reason=reason)


# The spec's rule, said where it fails a group, with the way to tolerate some.
_ANY_UNSAFE = " (any UNSAFE clone fails a group; max_unsafe= tolerates some)"


def group_description(group: TrialGroupSummary) -> str:
    """``18/20 safe, 90% pass rate, threshold: 90%, 95% CI 69-97%`` and what applies of
    ``max unsafe``, the exact interval, ``sequential``, clones not run and not counted."""
    counts = group.counts
    low, high = group.interval.low, group.interval.high
    parts = [f"{counts.safe}/{group.executed} safe"]
    if counts.no_result:
        parts.append(f"{counts.no_result} no-result")
    parts.append(f"{percent(group.pass_rate)} pass rate")
    parts.append(f"threshold: {percent(group.threshold)}")
    if group.max_unsafe:
        parts.append(f"max unsafe: {group.max_unsafe} ({counts.unsafe} UNSAFE)")
    if group.confidence is None:
        # The lower bound is rounded down, so the printed interval never claims more
        # confidence in the pass rate than the data gives (18 of 20 prints 69 to 97).
        lower, upper = math.floor(low * 100), round(high * 100)
        parts.append(f"95% CI {lower}–{upper}%")  # noqa: RUF001 - the documented format
    else:
        lower_text, upper_text = _bounds_text(low, high, group.threshold)
        parts.append(
            f"{percent(group.confidence)} CI {lower_text}–{upper_text}% (exact)"  # noqa: RUF001
        )
    if group.sequential:
        parts.append("sequential")
    if group.not_run:
        # Only a group that stopped early names the cause: clones missing from a saved
        # trace may also be clones that recorded no result.
        if group.early_stopped:
            cause = "sequential stop" if group.sequential else "early stop"
            parts.append(f"{group.not_run} not run ({cause})")
        else:
            parts.append(f"{group.not_run} not run")
    if group.not_counted:
        unsafe = group.not_counted_unsafe
        found = f" ({unsafe} UNSAFE)" if unsafe else ""
        parts.append(f"{group.not_counted} finished after the decision, not counted{found}")
    return ", ".join(parts)


def group_reason(group: TrialGroupSummary) -> str | None:
    """Why the group did not pass, on one line; ``None`` when it passed.

    ``"4 UNSAFE (any UNSAFE clone fails a group; max_unsafe= tolerates some)"`` (more UNSAFE
    clones than ``max_unsafe``, 0 by default, fail the group), else the pass rate against
    the threshold, with what the clones that were not SAFE ended as: ``"pass rate 60% below
    threshold 90% (2 ERROR, 2 UNDETERMINED)"``. With ``confidence`` it names the interval
    that decided (``"95% upper bound 88.2% below threshold 90%"``) or, for an INCONCLUSIVE
    group, says that the interval contains the threshold or that the sequential test did
    not decide.
    The summary's own ``reason`` is not read (this is what it should say), except for
    an INCOMPLETE group, whose reason says which facts were missing.
    """
    if group.passed:
        return None
    if group.verdict == "incomplete":
        # Only the rebuild knows what was missing: its own words.
        return f"incomplete: {group.reason or 'the saved run does not decide it'}"
    counts = group.counts
    others = [
        f"{count} {label}"
        for count, label in (
            (counts.error, "ERROR"),
            (counts.undetermined, "UNDETERMINED"),
            (counts.no_result, "no result"),
        )
        if count
    ]
    if counts.unsafe > group.max_unsafe:
        limit = f" (max unsafe: {group.max_unsafe})" if group.max_unsafe else _ANY_UNSAFE
        return ", ".join([f"{counts.unsafe} UNSAFE{limit}", *others])
    if group.confidence is not None:
        head = _confidence_reason(group, group.confidence)
    elif not group.executed:
        head = "no clone ran"
    elif not counts.safe:
        head = "no SAFE clone"
    else:
        rate, threshold = _percent_pair(group.pass_rate, group.threshold)
        head = f"pass rate {rate} below threshold {threshold}"
    if counts.unsafe:
        others.insert(0, f"{counts.unsafe} UNSAFE")
    return head + (f" ({', '.join(others)})" if others else "")


def _confidence_reason(group: TrialGroupSummary, confidence: float) -> str:
    level = percent(confidence)
    threshold = percent(group.threshold)
    low_text, high_text = _bounds_text(group.interval.low, group.interval.high, group.threshold)
    failed = group.verdict == "failed"
    if group.sequential:
        if failed:
            return f"sequential test: SAFE rate below threshold {threshold} ({level})"
        return f"sequential test undecided after {group.executed} of {group.n} clones"
    if failed:
        return f"{level} upper bound {high_text}% below threshold {threshold}"
    return f"{level} interval {low_text}–{high_text}% contains threshold {threshold}"  # noqa: RUF001


def _bounds_text(low: float, high: float, threshold: float) -> tuple[str, str]:
    """Both bounds as percentages rounded outwards (the lower down, the upper up), with
    as many decimals as it takes for the printed bounds to compare with the threshold
    as the true ones do, so the line never contradicts its verdict."""
    for decimals in range(5):
        scale = 10.0 ** (decimals + 2)
        shown_low = math.floor(low * scale) / scale
        shown_high = math.ceil(high * scale) / scale
        if (shown_low >= threshold) == (low >= threshold) and (shown_high < threshold) == (
            high < threshold
        ):
            break
    return f"{shown_low * 100:.{decimals}f}", f"{shown_high * 100:.{decimals}f}"


def _percent_pair(rate: float, threshold: float) -> tuple[str, str]:
    """Both as percentages, with as many decimals as it takes to tell them apart."""
    for decimals in range(4):
        shown = percent(rate, digits=decimals), percent(threshold, digits=decimals)
        if shown[0] != shown[1]:
            return shown
    return shown
