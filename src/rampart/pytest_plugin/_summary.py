"""The terminal safety summary, as pure functions from results to lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from rampart._text import one_line
from rampart.core.result import SafetyStatus

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.core.result import Result
    from rampart.reporting import TestRunReport

__all__ = ["GroupLine", "group_line", "result_line", "summary_lines"]

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


@attrs.frozen(kw_only=True)
class GroupLine:
    """A trial group's aggregate, JSON-safe so it can cross from an xdist worker."""

    nodeid: str
    name: str
    description: str
    passed: bool


def result_line(result: Result) -> str:
    """``  FAIL  test_x -- summary (tool_only)``."""
    label = LABELS.get(result.status, "????").ljust(4)
    name = result.metadata.get("_pytest_test_name")
    text = f"{one_line(result.summary)} ({result.observability_level.value})"
    if isinstance(name, str) and name:
        return f"  {label}  {one_line(name)} -- {text}"
    return f"  {label}  {text}"


def group_line(group: GroupLine) -> str:
    """``  PASS  test_x [18/20 safe, ...] -- PASSED``; the label follows the verdict."""
    label = "PASS" if group.passed else "FAIL"
    verdict = "PASSED" if group.passed else "FAILED"
    return f"  {label}  {one_line(group.name)} [{group.description}] -- {verdict}"


def summary_lines(report: TestRunReport, groups: Sequence[GroupLine]) -> list[str]:
    """The body under the ``RAMPART Safety Summary`` separator."""
    lines: list[str] = []
    for category, results in report.by_harm_category().items():
        lines.append("")
        lines.append(f"{category.upper()} ({len(results)} tests)")
        ordered = sorted(results, key=lambda r: _ORDER.get(r.status, 4))
        lines.extend(result_line(result) for result in ordered)
    if groups:
        lines.append("")
        lines.extend(group_line(group) for group in sorted(groups, key=lambda g: g.nodeid))
    summary = report.population_summary()
    if summary.total_runs:
        lines.append("")
        lines.append(
            f"Population: {summary.total_runs} runs - {summary.unsafe_count} unsafe "
            f"({summary.attack_success_rate:.1%} attack success rate), "
            f"{summary.undetermined_count} undetermined, {summary.error_count} errors"
        )
    return lines
