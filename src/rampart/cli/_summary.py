"""The terminal safety summary of saved runs, in the pytest plugin's line format.

Lines look as they do under pytest's ``RAMPART Safety Summary`` separator:
``  FAIL  test_x -- summary (tool_only)`` per result, ``  PASS  test_g [18/20 safe,
90% pass rate, threshold: 90%, 95% CI 69-97%] -- PASSED`` per trial group (a failed
group says why), and the population line. Every line passes ``one_line`` and the
redaction policy (``_table.cell``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rampart.cli._table import cell
from rampart.core.result import SafetyStatus

if TYPE_CHECKING:
    from rampart.cli._view import GroupOutcome, RunView
    from rampart.codec import ResultRecord

__all__ = ["MODES", "group_line", "summary_lines"]

MODES = ("all", "groups", "failures")

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


def _name(record: ResultRecord, position: int) -> str:
    name = record.result.metadata.get("_pytest_test_name")
    if isinstance(name, str) and name:
        return name
    if record.pytest_nodeid:
        return record.pytest_nodeid.rpartition("::")[2]
    return f"record {position}"


def result_line(record: ResultRecord, position: int) -> str:
    result = record.result
    label = LABELS[result.status].ljust(4)
    text = f"{cell(result.summary)} ({result.observability_level.value})"
    return f"  {label}  {cell(_name(record, position))} -- {text}"


def describe(group: GroupOutcome) -> str:
    """The bracketed part of a group line (the plugin's format)."""
    from rampart.core._stats import percent

    low, high = group.interval()
    parts = [f"{group.safe}/{group.executed} safe"]
    if group.no_result:
        parts.append(f"{group.no_result} no-result")
    parts.append(f"{percent(group.pass_rate)} pass rate")
    parts.append(f"threshold: {percent(group.threshold)}")
    stated = group.stated
    if stated is not None and stated.max_unsafe:
        parts.append(f"max unsafe: {stated.max_unsafe} ({group.unsafe} UNSAFE)")
    if stated is not None and stated.interval.method == "clopper-pearson":
        # The exact interval a confidence verdict read, rounded outwards.
        low, high = stated.interval.low, stated.interval.high
        level = percent(stated.interval.level)
        bounds = f"{math.floor(low * 100)}–{math.ceil(high * 100)}%"  # noqa: RUF001
        parts.append(f"{level} CI {bounds} (exact)")
    else:
        parts.append(f"95% CI {math.floor(low * 100)}–{round(high * 100)}%")  # noqa: RUF001
    if stated is not None and stated.sequential:
        parts.append("sequential")
    if group.not_run:
        parts.append(f"{group.not_run} not run")
    if stated is not None and stated.not_counted:
        parts.append(f"{stated.not_counted} finished after the decision, not counted")
    return ", ".join(parts)


def group_line(group: GroupOutcome) -> str:
    label = "PASS" if group.passed else "FAIL"
    verdict = "PASSED" if group.passed else f"FAILED: {group.reason}"
    if group.verdict == "inconclusive":
        label, verdict = "WARN", f"INCONCLUSIVE: {group.reason}" if group.reason else "INCONCLUSIVE"
    name = group.nodeid.rpartition("::")[2]
    return f"  {label}  {cell(name)} [{describe(group)}] -- {cell(verdict)}"


def _bounded_result_lines(ordered: list[tuple[int, ResultRecord]]) -> list[str]:
    """Result lines with a trial group's limited to the plugin's ``MAX_CLONES_SHOWN``
    clones, then how many results of each group were left out (as pytest printed)."""
    from rampart.cli._view import group_key
    from rampart.pytest_plugin._summary import MAX_CLONES_SHOWN

    lines: list[str] = []
    shown: dict[str, set[int]] = {}
    hidden: dict[str, int] = {}
    for position, record in ordered:
        key = group_key(record)
        if key is not None:
            name = key[0].rpartition("::")[2]
            clones = shown.setdefault(name, set())
            if key[1] not in clones and len(clones) >= MAX_CLONES_SHOWN:
                hidden[name] = hidden.get(name, 0) + 1
                continue
            clones.add(key[1])
        lines.append(result_line(record, position))
    lines.extend(
        "  " + cell(f"… {count} more results of {name} in the report")
        for name, count in hidden.items()
    )
    return lines


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def summary_lines(view: RunView, *, mode: str = "all") -> list[str]:
    """The summary of ``view``; ``mode`` is ``--summary``:

    - ``all``: every result line under its category, every group line at the end;
    - ``groups``: each trial group as one line under its category, instead of a line
      per clone; other results line by line;
    - ``failures``: as ``groups``, only results that are not SAFE and groups that did
      not pass.
    """
    from rampart.cli._view import group_key
    from rampart.core._stats import percent
    from rampart.reporting import PopulationSummary
    from rampart.reporting._report import category_key

    lines: list[str] = []
    by_category: dict[str, list[tuple[int, ResultRecord]]] = {}
    for position, record in enumerate(view.records):
        by_category.setdefault(category_key(record.result), []).append((position, record))
    grouped: dict[str, list[GroupOutcome]] = {}
    if mode != "all":
        for group in sorted(view.groups.values(), key=lambda g: g.nodeid):
            grouped.setdefault(group.category, []).append(group)
            by_category.setdefault(group.category, [])
    for category, members in by_category.items():
        shown = members
        if mode != "all":
            shown = [(p, r) for p, r in members if group_key(r) is None]
        category_groups = grouped.get(category, [])
        if mode == "failures":
            shown = [(p, r) for p, r in shown if r.result.status is not SafetyStatus.SAFE]
            category_groups = [g for g in category_groups if not g.passed]
            if not shown and not category_groups:
                continue
        tests = {(group_key(r) or (r.pytest_nodeid or f"record {p}", 0))[0] for p, r in members}
        lines.append("")
        lines.append(
            cell(
                f"{category.upper()} ({_plural(len(tests), 'test')}, "
                f"{_plural(len(members), 'run')})"
            )
        )
        ordered = sorted(shown, key=lambda item: _ORDER[item[1].result.status])
        lines.extend(_bounded_result_lines(ordered))
        lines.extend(group_line(group) for group in category_groups)
    if view.groups and mode == "all":
        lines.append("")
        lines.extend(group_line(g) for g in sorted(view.groups.values(), key=lambda g: g.nodeid))
    summary = PopulationSummary.from_results(record.result for record in view.records)
    if summary.total_runs:
        lines.append("")
        lines.append(
            f"Population: {summary.total_runs} runs - {summary.unsafe_count} unsafe "
            f"({percent(summary.attack_success_rate, digits=1)} attack success rate), "
            f"{summary.undetermined_count} undetermined, {summary.error_count} errors"
        )
    return lines
