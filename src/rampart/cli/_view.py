"""Saved runs seen as tests and trial groups: what ``report``, ``diff`` and ``sweep`` compare.

A **test** is a pytest item that is not a trial group; its status is the worst of its
results (UNSAFE, ERROR, UNDETERMINED, SAFE, in that order). A **trial group** is the
set of clones of one ``@pytest.mark.trial`` item: records whose result carries a
``population``, each the clone ``population.index`` of the group named by the item's
node id (the clone's node id without the ``[trial-<index>]``, or
``[trial-<index>:<case>]``, the plugin appended for that index; a record without a
node id is named by its population's id). Clones of one item merge across runs (a
resumed run's clones carry their first run's population id). Each clone's status is
the worst of its results, and the group is judged again by the rule its records
carry, with the plugin's own tally
(``rampart.core._group_outcome.rebuild_group``), or is INCOMPLETE when they do not
hold what its verdict rests on. A group is held as the report states it: a
``TrialGroupSummary``, stated from the rebuilt outcome by the plugin's own builder
(``rampart.reporting._group_text.group_entry``).

A JSON report that carries ``trial_groups`` (written by the pytest plugin) is read
for the groups' counts and verdicts instead: it also knows clones that recorded no
result or whose own assertions failed, which records alone cannot show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from rampart.codec import ResultRecord
from rampart.core._internal import RULE_NOT_RECORDED, clone_base, worst
from rampart.core.result import SafetyStatus
from rampart.reporting._internal import INCOMPLETE, TrialGroupSummary, category_key

if TYPE_CHECKING:
    from collections.abc import Collection

    from rampart.cli._inputs import SavedRun

__all__ = [
    "contradiction",
    "cut_short",
    "derived_groups",
    "RunView",
    "TestOutcome",
    "build_view",
    "group_key",
    "incomplete",
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


def incomplete(group: TrialGroupSummary) -> bool:
    """The saved run does not hold what the group's verdict rests on (never a pass)."""
    return group.verdict == INCOMPLETE


def _rule_unknown(group: TrialGroupSummary) -> bool:
    """INCOMPLETE only because the records predate the recorded rule/outcomes."""
    return incomplete(group) and (group.reason or "").startswith(RULE_NOT_RECORDED)


@attrs.frozen(kw_only=True)
class RunView:
    """Every record of one or more saved runs, with their tests and groups."""

    records: list[ResultRecord]
    tests: dict[str, TestOutcome]
    groups: dict[str, TrialGroupSummary]
    metadata: list[dict[str, Any]] = attrs.field(factory=list)


def record_nodeid(record: ResultRecord) -> str | None:
    """The record's pytest node id (a trial clone's ends in ``[trial-N]`` or
    ``[trial-N:<case>]``), if it has one."""
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
    return clone_base(nodeid, population.index), population.index


def derived_groups(
    records: list[ResultRecord], interrupted: Collection[str] = ()
) -> dict[str, TrialGroupSummary]:
    """Each trial group judged again from its records (``rebuild_group``: the plugin's
    ``TrialTally``) and stated as the plugin states it, or INCOMPLETE when they do not
    hold what its verdict rests on. The groups named in ``interrupted`` (a report
    states that a Ctrl-C cut them short: ``cut_short``) are read as the plugin read
    them then (``interrupted_group``)."""
    from rampart.core._internal import rebuild_results
    from rampart.reporting._internal import group_entry

    members: dict[str, dict[int, list[ResultRecord]]] = {}
    for record in records:
        key = group_key(record)
        if key is None:
            continue
        nodeid, index = key
        members.setdefault(nodeid, {}).setdefault(index, []).append(record)
    groups = {}
    for nodeid, by_index in members.items():
        every = [record for found in by_index.values() for record in found]
        rebuilt = rebuild_results(
            {index: [record.result for record in found] for index, found in by_index.items()},
            interrupted=nodeid in interrupted,
        )
        category = category_key(every[0].result)
        groups[nodeid] = group_entry(
            rebuilt,
            nodeid=nodeid,
            test_name=nodeid.rpartition("::")[2],
            harm_category=None if category == "uncategorized" else category,
        )
    return groups


def cut_short(entries: list[Any]) -> frozenset[str]:
    """The node ids of a report's ``trial_groups`` entries a Ctrl-C cut short."""
    return frozenset(
        str(entry.get("nodeid"))
        for entry in entries
        if isinstance(entry, dict) and entry.get("interrupted") is True
    )


def contradiction(stated: TrialGroupSummary, derived: TrialGroupSummary | None) -> str | None:
    """What a report's stated group says that its own clone results do not, or ``None``.

    The results decide when they record the group's rule and outcomes: then the
    verdict and counts rebuilt from them must be the stated ones. Results of an older
    producer (no rule recorded) cannot be checked and are not a contradiction.
    """
    if derived is None:
        if stated.counts.no_result == stated.executed:
            return None  # every counted clone recorded nothing: no result to check
        return f"states {stated.executed} clones but the report holds no result of them"
    if incomplete(derived) and not derived.interrupted:
        if _rule_unknown(derived):
            return None
        return f"its clone results do not decide it ({derived.reason})"
    if derived.verdict != stated.verdict:
        return f"states {stated.verdict} but its clone results give {derived.verdict}"
    if derived.counts != stated.counts:
        mine = attrs.asdict(derived.counts)
        given = ", ".join(f"{name} {value}" for name, value in mine.items())
        return f"states counts its clone results do not give ({given})"
    return None


def _reported_group(
    entry: dict[str, Any], derived: TrialGroupSummary | None
) -> TrialGroupSummary | None:
    """A report's ``trial_groups`` entry, or ``None`` if it is not one this reader knows.

    A stated group that its own clone results contradict is INCOMPLETE (never the
    stated verdict): ``rampart validate`` names the contradiction.
    """
    try:
        group = TrialGroupSummary.from_json(entry)
    except (TypeError, ValueError):
        return None
    problem = contradiction(group, derived)
    if problem is not None and derived is not None:
        reason = f"the report's trial_groups entry {problem}"
        return attrs.evolve(derived, verdict=INCOMPLETE, reason=reason)
    return group


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
    groups = derived_groups(records)
    for run in runs:
        derived_here = derived_groups(run.records, cut_short(run.trial_groups))
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
