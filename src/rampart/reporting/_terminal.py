"""The terminal safety summary: the lines under ``RAMPART Safety Summary``.

One renderer for the pytest plugin (from its run ledger) and ``rampart report`` (from
saved reports and traces), so a saved run re-renders exactly as pytest printed it. It
is a projection of the report's data: each result as a ``SummaryEntry`` (the result
and which test, and which trial clone, it belongs to) and each trial group as its
``TrialGroupSummary``.

Every string that came from a test or an agent (names, summaries, harm categories)
goes through ``one_line``, and every line then passes the redaction policy
(``rampart._redact``), in that order, so an escape sequence cannot split a secret
past the policy. The summary is bounded: per category, a trial group prints the
result lines of at most ``MAX_CLONES_SHOWN`` of its clones (the worst results first)
and then one line saying how many more results the report holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from rampart._redact import redact
from rampart._text import one_line
from rampart.core._internal import harm_labels, percent, severity
from rampart.core.result import Result, SafetyStatus
from rampart.reporting._group_text import group_description
from rampart.reporting._report import UNCATEGORIZED, PopulationSummary, category_key

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.reporting._run_data import TrialGroupSummary

__all__ = [
    "MAX_CLONES_SHOWN",
    "MODES",
    "SummaryEntry",
    "category_header",
    "group_line",
    "result_line",
    "summary_lines",
]

#: Clones whose result lines a trial group prints per category; the rest are counted.
MAX_CLONES_SHOWN = 20

#: The summary modes (``--rampart-summary``, ``rampart report --summary``).
MODES = ("all", "groups", "failures")

LABELS = {
    SafetyStatus.SAFE: "PASS",
    SafetyStatus.UNSAFE: "FAIL",
    SafetyStatus.UNDETERMINED: "WARN",
    SafetyStatus.ERROR: "ERR",
}
_GROUP_LABELS = {"passed": "PASS", "failed": "FAIL", "inconclusive": "WARN", "incomplete": "WARN"}


@attrs.frozen(kw_only=True)
class SummaryEntry:
    """One result as the summary lists it.

    ``nodeid`` and ``name`` are its test's (a trial clone's: its group's, the pytest
    item's); ``shown`` is the name its line shows (a clone's ends in ``[trial-N]``, or
    ``[trial-N:<case>]`` when its marker named what it tests);
    ``clone`` is the trial clone index, ``None`` for a result that is not a clone's.
    """

    result: Result
    nodeid: str
    name: str
    shown: str
    clone: int | None = None


def result_line(entry: SummaryEntry, *, more: int = 0) -> str:
    """``  FAIL  test_x -- summary (tool_only)``; with ``more`` identical lines of other
    clones folded into it: ``  ERR   test_x[trial-0] and 9 more clones -- ...``."""
    result = entry.result
    label = LABELS.get(result.status, "????").ljust(4)
    text = f"{one_line(result.summary)} ({result.observability_level.value})"
    folded = f" and {_plural(more, 'more clone')}" if more else ""
    return redact(f"  {label}  {one_line(entry.shown)}{folded} -- {text}")


def group_line(group: TrialGroupSummary) -> str:
    """``  PASS  test_x [18/20 safe, ...] -- PASSED``; the label follows the verdict.

    A group that did not pass says why on the line itself: ``-- FAILED: 4 UNSAFE``;
    an INCONCLUSIVE group (only with ``confidence=``) reads ``  WARN  ... --
    INCONCLUSIVE: ...``, whatever outcome ``rampart_inconclusive`` gave its test. A
    group a Ctrl-C cut short reads ``-- INTERRUPTED: 8 of 40 clones ran, ...``.
    """
    label = _GROUP_LABELS.get(group.verdict, "????")
    word = group.verdict.upper()
    if group.interrupted:
        word = "INTERRUPTED" if word == "INCOMPLETE" else f"INTERRUPTED, {word}"
    if group.reason is not None:
        word += f": {one_line(group.reason)}"
    name = one_line(group.test_name)
    return redact(f"  {label}  {name} [{group_description(group)}] -- {word}")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def category_header(category: str, members: Sequence[SummaryEntry]) -> str:
    """``DATA_EXFILTRATION (3 tests, 52 runs)``: tests are pytest items, runs results.

    Results group by their primary category; the other tags of their tests' ``harm``
    markers follow: ``PROMPT_INJECTION (1 test, 3 runs; also tagged owasp-llm01)``.
    """
    tests = len({entry.nodeid for entry in members})
    name = one_line(category).upper()
    others: dict[str, None] = {}
    for entry in members:
        for label in harm_labels(entry.result):
            if label != category:
                others[one_line(label)] = None
    tagged = f"; also tagged {', '.join(others)}" if others else ""
    return redact(f"{name} ({_plural(tests, 'test')}, {_plural(len(members), 'run')}{tagged})")


def _group_categories(
    entries: Sequence[SummaryEntry], groups: Sequence[TrialGroupSummary]
) -> dict[str, str]:
    """The category each group's line goes under: its first clone result's, else the
    group's own harm category."""
    wanted = {group.nodeid for group in groups}
    found: dict[str, str] = {}
    for entry in entries:
        if entry.clone is not None and entry.nodeid in wanted and entry.nodeid not in found:
            found[entry.nodeid] = category_key(entry.result)
    for group in groups:
        found.setdefault(group.nodeid, group.harm_category or UNCATEGORIZED)
    return found


def _alike_key(entry: SummaryEntry) -> tuple[str, str, str] | None:
    """What makes a trial clone's ERROR line the same as another's (None: not an ERROR
    clone): its group, its summary and its observability."""
    result = entry.result
    if entry.clone is None or result.status is not SafetyStatus.ERROR:
        return None
    return (entry.nodeid, one_line(result.summary), result.observability_level.value)


def _bounded_result_lines(ordered: Sequence[SummaryEntry]) -> list[str]:
    """Result lines, a trial group's limited to ``MAX_CLONES_SHOWN`` clones, then how
    many results of each group were left out. A group's identical ERROR lines (the same
    summary: an endpoint down for every clone) are one line with their count."""
    alike: dict[tuple[str, str, str], int] = {}
    for entry in ordered:
        key = _alike_key(entry)
        if key is not None:
            alike[key] = alike.get(key, 0) + 1
    lines: list[str] = []
    shown: dict[str, set[int]] = {}
    hidden: dict[str, tuple[str, int]] = {}
    printed: set[tuple[str, str, str]] = set()
    for entry in ordered:
        key = _alike_key(entry)
        if key is not None:
            if key in printed:
                continue
            printed.add(key)
        if entry.clone is not None:
            clones = shown.setdefault(entry.nodeid, set())
            if entry.clone not in clones and len(clones) >= MAX_CLONES_SHOWN:
                count = hidden.get(entry.nodeid, (entry.name, 0))[1]
                hidden[entry.nodeid] = (entry.name, count + (alike[key] if key else 1))
                continue
            clones.add(entry.clone)
        more = 0 if key is None else alike[key] - 1
        lines.append(result_line(entry, more=more))
    for name, count in hidden.values():
        lines.append(redact(f"  … {count} more results of {one_line(name)} in the report"))
    return lines


def _by_nodeid(group: TrialGroupSummary) -> str:
    return group.nodeid


def summary_lines(
    entries: Sequence[SummaryEntry],
    groups: Sequence[TrialGroupSummary],
    *,
    mode: str = "all",
) -> list[str]:
    """The body under the ``RAMPART Safety Summary`` separator.

    ``entries`` in report order: categories appear in the order of their first result,
    as in the report's ``by_harm_category``. ``mode`` (one of ``MODES``):

    - ``all``: every result line, then every group line at the end;
    - ``groups``: each trial group as its one group line under its category, instead
      of a line per clone; other results line by line;
    - ``failures``: as ``groups``, but only results that are not SAFE and groups that
      did not pass.
    """
    lines: list[str] = []
    by_category: dict[str, list[SummaryEntry]] = {}
    for entry in entries:
        by_category.setdefault(category_key(entry.result), []).append(entry)
    grouped: dict[str, list[TrialGroupSummary]] = {}
    if mode != "all":
        categories = _group_categories(entries, groups)
        for group in sorted(groups, key=_by_nodeid):
            category = categories[group.nodeid]
            grouped.setdefault(category, []).append(group)
            by_category.setdefault(category, [])
    for category, members in by_category.items():
        shown = members
        if mode != "all":
            shown = [entry for entry in members if entry.clone is None]
        category_groups = grouped.get(category, [])
        if mode == "failures":
            shown = [entry for entry in shown if entry.result.status is not SafetyStatus.SAFE]
            category_groups = [group for group in category_groups if not group.passed]
            if not shown and not category_groups:
                continue
        lines.append("")
        lines.append(category_header(category, members))
        ordered = sorted(shown, key=lambda entry: severity(entry.result.status))
        lines.extend(_bounded_result_lines(ordered))
        lines.extend(group_line(group) for group in category_groups)
    if groups and mode == "all":
        lines.append("")
        lines.extend(group_line(group) for group in sorted(groups, key=_by_nodeid))
    population = PopulationSummary.from_results(entry.result for entry in entries)
    # Clones that ran and recorded nothing are counted too (the JSON report's no_result).
    silent = sum(group.counts.no_result for group in groups)
    if population.total_runs or silent:
        lines.append("")
        lines.append(
            redact(
                f"Population: {population.total_runs} runs - {population.unsafe_count} unsafe "
                f"({percent(population.attack_success_rate, digits=1)} attack success rate), "
                f"{population.undetermined_count} undetermined, "
                f"{population.error_count} errors"
                + (f"; {silent} trial clones recorded no result" if silent else "")
            )
        )
    return lines
