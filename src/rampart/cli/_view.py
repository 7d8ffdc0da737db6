"""Saved runs seen as tests and trial groups: what ``report``, ``diff`` and ``sweep`` compare.

A **test** is a pytest item that is not a trial group; its status is the worst of its
results (UNSAFE, ERROR, UNDETERMINED, SAFE, in that order). A **trial group** is the
set of clones of one ``@pytest.mark.trial`` item: records whose result carries a
``population``, each the clone ``population.index`` of the group named by the item's
node id (the clone's node id without the ``[trial-<index>]`` the plugin appended for
that index; a record without a node id is named by its population's id). Clones of
one item merge across runs (a resumed run's clones carry their first run's
population id). Each clone's status is the worst of its results, and the group's
verdict follows the spec's count rule (``rampart.core._trial_rule.population_status``):
any UNSAFE clone fails it, else it passes when SAFE / executed reaches the threshold.

A JSON report that carries ``trial_groups`` (written by the pytest plugin) is read
for the groups' counts and verdicts instead: it also knows clones that recorded no
result or whose own assertions failed, which records alone cannot show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from rampart.codec import ResultRecord
from rampart.core._severity import worst
from rampart.core.result import SafetyStatus
from rampart.reporting import TrialGroupSummary
from rampart.reporting._report import category_key

if TYPE_CHECKING:
    from rampart.cli._inputs import SavedRun

__all__ = [
    "GroupOutcome",
    "RunView",
    "TestOutcome",
    "build_view",
    "group_key",
    "group_summary",
    "record_nodeid",
    "worst",
]


@attrs.frozen(kw_only=True)
class TestOutcome:
    """One test that is not a trial group: its worst status, and its results' summaries."""

    __test__ = False

    nodeid: str
    category: str
    status: SafetyStatus
    summary: str
    results: int


@attrs.frozen(kw_only=True)
class GroupOutcome:
    """One trial group: counts by clone status, verdict, and each clone's status by index."""

    nodeid: str
    category: str
    n: int
    threshold: float
    safe: int
    unsafe: int
    undetermined: int
    error: int
    no_result: int = 0
    not_run: int = 0
    verdict: str
    reason: str | None = None
    clones: dict[int, SafetyStatus] = attrs.field(factory=dict)
    stated: TrialGroupSummary | None = None

    @property
    def executed(self) -> int:
        return self.safe + self.unsafe + self.undetermined + self.error + self.no_result

    @property
    def pass_rate(self) -> float:
        return self.safe / self.executed if self.executed else 0.0

    @property
    def passed(self) -> bool:
        return self.verdict == "passed"

    def interval(self) -> tuple[float, float]:
        from rampart.core._stats import wilson_interval

        return wilson_interval(self.safe, self.executed)


@attrs.frozen(kw_only=True)
class RunView:
    """Every record of one or more saved runs, with their tests and groups."""

    records: list[ResultRecord]
    tests: dict[str, TestOutcome]
    groups: dict[str, GroupOutcome]
    metadata: list[dict[str, Any]] = attrs.field(factory=list)


def record_nodeid(record: ResultRecord) -> str | None:
    """The record's pytest node id (a trial clone's ends in ``[trial-N]``), if it has one."""
    if record.pytest_nodeid is not None:
        return record.pytest_nodeid
    nodeid = record.result.metadata.get("_pytest_nodeid")
    return nodeid if isinstance(nodeid, str) else None


def group_key(record: ResultRecord) -> tuple[str, int] | None:
    """``(group node id, clone index)`` of a trial clone's record, else ``None``."""
    population = record.result.population
    if population is None:
        return None
    nodeid = record_nodeid(record)
    if nodeid is None:
        return f"population {population.id}", population.index
    return nodeid.removesuffix(f"[trial-{population.index}]"), population.index


def _derived_groups(records: list[ResultRecord]) -> dict[str, GroupOutcome]:
    from rampart.core._trial_rule import population_status
    from rampart.reporting._group_text import group_reason

    clones: dict[str, dict[int, list[SafetyStatus]]] = {}
    first: dict[str, ResultRecord] = {}
    for record in records:
        key = group_key(record)
        if key is None:
            continue
        nodeid, index = key
        first.setdefault(nodeid, record)
        clones.setdefault(nodeid, {}).setdefault(index, []).append(record.result.status)
    groups = {}
    for nodeid, by_index in clones.items():
        statuses = {index: worst(found) for index, found in sorted(by_index.items())}
        population = first[nodeid].result.population
        assert population is not None
        counts = dict.fromkeys(SafetyStatus, 0)
        for status in statuses.values():
            counts[status] += 1
        executed = len(statuses)
        verdict = population_status(
            safe=counts[SafetyStatus.SAFE],
            unsafe=counts[SafetyStatus.UNSAFE],
            error=counts[SafetyStatus.ERROR],
            executed=executed,
            threshold=population.threshold,
        )
        fields: dict[str, Any] = {
            "safe": counts[SafetyStatus.SAFE],
            "unsafe": counts[SafetyStatus.UNSAFE],
            "undetermined": counts[SafetyStatus.UNDETERMINED],
            "error": counts[SafetyStatus.ERROR],
            "threshold": population.threshold,
            "verdict": "passed" if verdict is SafetyStatus.SAFE else "failed",
        }
        group = GroupOutcome(
            nodeid=nodeid,
            category=category_key(first[nodeid].result),
            n=population.size,
            not_run=max(0, population.size - executed),
            clones=statuses,
            **fields,
        )
        groups[nodeid] = attrs.evolve(group, reason=group_reason(group_summary(group)))
    return groups


def _reported_group(entry: dict[str, Any], derived: GroupOutcome | None) -> GroupOutcome | None:
    """A report's ``trial_groups`` entry, or ``None`` if it is not one this reader knows."""
    from rampart.reporting import TrialGroupSummary

    try:
        group = TrialGroupSummary.from_json(entry)
    except (TypeError, ValueError):
        return None
    counts = group.counts
    return GroupOutcome(
        nodeid=group.nodeid,
        category=group.harm_category or (derived.category if derived else "uncategorized"),
        n=group.n,
        threshold=group.threshold,
        safe=counts.safe,
        unsafe=counts.unsafe,
        undetermined=counts.undetermined,
        error=counts.error,
        no_result=counts.no_result,
        not_run=group.not_run,
        verdict=group.verdict,
        reason=group.reason,
        clones=derived.clones if derived else {},
        stated=group,
    )


def group_summary(group: GroupOutcome) -> TrialGroupSummary:
    """``group`` as the report's ``TrialGroupSummary`` (as stated, when a report stated it)."""
    from rampart.reporting import GroupInterval, StatusCounts, TrialGroupSummary

    if group.stated is not None:
        return group.stated
    low, high = group.interval()
    return TrialGroupSummary(
        nodeid=group.nodeid,
        test_name=group.nodeid.rpartition("::")[2],
        harm_category=None if group.category == "uncategorized" else group.category,
        n=max(group.n, group.executed),
        threshold=group.threshold,
        counts=StatusCounts(
            safe=group.safe,
            unsafe=group.unsafe,
            undetermined=group.undetermined,
            error=group.error,
            no_result=group.no_result,
        ),
        executed=group.executed,
        not_run=group.not_run,
        pass_rate=group.pass_rate,
        interval=GroupInterval(method="wilson", level=0.95, low=low, high=high),
        verdict=group.verdict,
        population_status="safe" if group.passed else _failed_status(group),
        reason=group.reason,
    )


def _failed_status(group: GroupOutcome) -> str:
    if group.unsafe:
        return "unsafe"
    return "error" if group.error else "undetermined"


def _tests(records: list[ResultRecord]) -> dict[str, TestOutcome]:
    found: dict[str, list[ResultRecord]] = {}
    for position, record in enumerate(records):
        if record.result.population is not None:
            continue
        nodeid = record_nodeid(record) or f"record {position}"
        found.setdefault(nodeid, []).append(record)
    tests = {}
    for nodeid, members in found.items():
        status = worst(record.result.status for record in members)
        summary = next(r.result.summary for r in members if r.result.status is status)
        tests[nodeid] = TestOutcome(
            nodeid=nodeid,
            category=category_key(members[0].result),
            status=status,
            summary=summary,
            results=len(members),
        )
    return tests


def build_view(runs: list[SavedRun]) -> RunView:
    """The tests and groups of ``runs`` merged into one view (records in file order).

    Groups of the same node id in two runs are merged clone by clone (later runs win a
    clone index both hold); report-stated groups are used as stated.
    """
    records = [record for run in runs for record in run.records]
    groups = _derived_groups(records)
    for run in runs:
        derived_here = _derived_groups(run.records)
        for entry in run.trial_groups:
            nodeid = entry.get("nodeid")
            reported = _reported_group(entry, derived_here.get(str(nodeid)))
            if reported is not None:
                groups[reported.nodeid] = reported
    return RunView(
        records=records,
        tests=_tests(records),
        groups=groups,
        metadata=[run.metadata for run in runs],
    )
