"""The terminal safety summary, as pure functions from ledger entries to lines.

Every string that came from a test or an agent (names, summaries, harm categories)
goes through ``one_line``, and every line then passes the redaction policy
(``rampart._redact``), in that order, so an escape sequence cannot split a secret
past the policy. The summary is bounded: per category, a trial group prints the
result lines of at most ``MAX_CLONES_SHOWN`` of its clones (the worst results first)
and then one line saying how many more results the report holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart._redact import redact
from rampart._text import one_line
from rampart.core._stats import percent
from rampart.core.result import SafetyStatus, TrialVerdict
from rampart.reporting import PopulationSummary
from rampart.reporting._report import UNCATEGORIZED, category_key

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.pytest_plugin._ledger import GroupRecord, RecordedResult

__all__ = ["MAX_CLONES_SHOWN", "category_header", "group_line", "result_line", "summary_lines"]

#: Clones whose result lines a trial group prints per category; the rest are counted.
MAX_CLONES_SHOWN = 20

LABELS = {
    SafetyStatus.SAFE: "PASS",
    SafetyStatus.UNSAFE: "FAIL",
    SafetyStatus.UNDETERMINED: "WARN",
    SafetyStatus.ERROR: "ERR",
}
_ORDER = {
    SafetyStatus.UNSAFE: 0,
    SafetyStatus.ERROR: 1,
    SafetyStatus.UNDETERMINED: 2,
    SafetyStatus.SAFE: 3,
}


def result_line(recorded: RecordedResult) -> str:
    """``  FAIL  test_x -- summary (tool_only)``."""
    result = recorded.result
    label = LABELS.get(result.status, "????").ljust(4)
    text = f"{one_line(result.summary)} ({result.observability_level.value})"
    return redact(f"  {label}  {one_line(recorded.attribution.test_name)} -- {text}")


_GROUP_LABELS = {
    TrialVerdict.PASSED: "PASS",
    TrialVerdict.FAILED: "FAIL",
    TrialVerdict.INCONCLUSIVE: "WARN",
}


def group_line(group: GroupRecord) -> str:
    """``  PASS  test_x [18/20 safe, ...] -- PASSED``; the label follows the verdict.

    A group that did not pass says why on the line itself: ``-- FAILED: 4 UNSAFE``;
    an INCONCLUSIVE group (only with ``confidence=``) reads ``  WARN  ... --
    INCONCLUSIVE: ...``, whatever outcome ``rampart_inconclusive`` gave its test.
    """
    verdict = group.verdict.verdict
    label = _GROUP_LABELS[verdict]
    word = verdict.value.upper()
    reason = group.verdict.reason()
    if reason is not None:
        word += f": {reason}"
    return redact(f"  {label}  {one_line(group.name)} [{group.verdict.describe()}] -- {word}")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def category_header(category: str, members: Sequence[RecordedResult]) -> str:
    """``DATA_EXFILTRATION (3 tests, 52 runs)``: tests are pytest items, runs results."""
    tests = len({recorded.attribution.nodeid for recorded in members})
    name = one_line(category).upper()
    return redact(f"{name} ({_plural(tests, 'test')}, {_plural(len(members), 'run')})")


def _group_category(group: GroupRecord, results: Sequence[RecordedResult]) -> str:
    """The category a group's line goes under: its clones' results', else its marker's."""
    for recorded in results:
        if recorded.attribution.clone is not None and recorded.attribution.nodeid == group.nodeid:
            return category_key(recorded.result)
    return group.harm if group.harm else UNCATEGORIZED


def _bounded_result_lines(ordered: Sequence[RecordedResult]) -> list[str]:
    """Result lines, a trial group's limited to ``MAX_CLONES_SHOWN`` clones, then how
    many results of each group were left out."""
    lines: list[str] = []
    shown: dict[str, set[int]] = {}
    hidden: dict[str, int] = {}
    for recorded in ordered:
        clone = recorded.attribution.clone
        if clone is not None:
            name = recorded.attribution.name
            clones = shown.setdefault(name, set())
            if clone not in clones and len(clones) >= MAX_CLONES_SHOWN:
                hidden[name] = hidden.get(name, 0) + 1
                continue
            clones.add(clone)
        lines.append(result_line(recorded))
    for name, count in hidden.items():
        lines.append(redact(f"  … {count} more results of {one_line(name)} in the report"))
    return lines


def summary_lines(
    results: Sequence[RecordedResult], groups: Sequence[GroupRecord], *, mode: str = "all"
) -> list[str]:
    """The body under the ``RAMPART Safety Summary`` separator.

    ``results`` in report order: categories appear in the order of their first result,
    as in the report's ``by_harm_category``. ``mode`` (``--rampart-summary``):

    - ``all``: every result line, then every group line at the end;
    - ``groups``: each trial group as its one group line under its category, instead
      of a line per clone; other results line by line;
    - ``failures``: as ``groups``, but only results that are not SAFE and groups that
      did not pass.
    """
    lines: list[str] = []
    by_category: dict[str, list[RecordedResult]] = {}
    for recorded in results:
        by_category.setdefault(category_key(recorded.result), []).append(recorded)
    grouped: dict[str, list[GroupRecord]] = {}
    if mode != "all":
        for group in sorted(groups, key=lambda g: g.nodeid):
            category = _group_category(group, results)
            grouped.setdefault(category, []).append(group)
            by_category.setdefault(category, [])
    for category, members in by_category.items():
        shown = members
        if mode != "all":
            shown = [r for r in members if r.attribution.clone is None]
        if mode == "failures":
            shown = [r for r in shown if r.result.status is not SafetyStatus.SAFE]
        category_groups = grouped.get(category, [])
        if mode == "failures":
            category_groups = [g for g in category_groups if not g.verdict.passed]
        if mode == "failures" and not shown and not category_groups:
            continue
        lines.append("")
        lines.append(category_header(category, members))
        ordered = sorted(shown, key=lambda r: _ORDER.get(r.result.status, 4))
        lines.extend(_bounded_result_lines(ordered))
        lines.extend(group_line(group) for group in category_groups)
    if groups and mode == "all":
        lines.append("")
        lines.extend(group_line(group) for group in sorted(groups, key=lambda g: g.nodeid))
    summary = PopulationSummary.from_results(recorded.result for recorded in results)
    if summary.total_runs:
        lines.append("")
        lines.append(
            f"Population: {summary.total_runs} runs - {summary.unsafe_count} unsafe "
            f"({percent(summary.attack_success_rate, digits=1)} attack success rate), "
            f"{summary.undetermined_count} undetermined, {summary.error_count} errors"
        )
    return lines
