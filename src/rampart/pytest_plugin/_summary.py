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
from rampart.core.result import SafetyStatus
from rampart.reporting import PopulationSummary
from rampart.reporting._report import category_key

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.pytest_plugin._ledger import GroupRecord, RecordedResult

__all__ = ["MAX_CLONES_SHOWN", "group_line", "result_line", "summary_lines"]

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


def group_line(group: GroupRecord) -> str:
    """``  PASS  test_x [18/20 safe, ...] -- PASSED``; the label follows the verdict."""
    passed = group.verdict.passed
    label = "PASS" if passed else "FAIL"
    verdict = "PASSED" if passed else "FAILED"
    return redact(f"  {label}  {one_line(group.name)} [{group.verdict.describe()}] -- {verdict}")


def summary_lines(results: Sequence[RecordedResult], groups: Sequence[GroupRecord]) -> list[str]:
    """The body under the ``RAMPART Safety Summary`` separator.

    ``results`` in report order: categories appear in the order of their first result,
    as in the report's ``by_harm_category``.
    """
    lines: list[str] = []
    by_category: dict[str, list[RecordedResult]] = {}
    for recorded in results:
        by_category.setdefault(category_key(recorded.result), []).append(recorded)
    for category, members in by_category.items():
        lines.append("")
        lines.append(redact(f"{one_line(category).upper()} ({len(members)} tests)"))
        ordered = sorted(members, key=lambda r: _ORDER.get(r.result.status, 4))
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
    if groups:
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
