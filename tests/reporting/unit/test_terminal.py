"""The one terminal summary renderer the pytest plugin and ``rampart report`` share:
its lines read only the report's data (results with their test, trial groups as
``TrialGroupSummary``)."""

from __future__ import annotations

from typing import Any

from rampart.cli._summary import MODES as CLI_MODES
from rampart.cli._view import group_key
from rampart.codec import ResultRecord
from rampart.core import PopulationRef, SafetyStatus
from rampart.pytest_plugin._report import SUMMARY_MODES
from rampart.reporting import GroupInterval, StatusCounts, TrialGroupSummary
from rampart.reporting._terminal import (
    MAX_CLONES_SHOWN,
    MODES,
    SummaryEntry,
    group_line,
    summary_lines,
)
from tests._builders import make_result


def _group(**changes: Any) -> TrialGroupSummary:
    fields: dict[str, Any] = {
        "nodeid": "t.py::test_g",
        "test_name": "test_g",
        "n": 30,
        "threshold": 0.5,
        "counts": StatusCounts(safe=20),
        "executed": 20,
        "not_run": 10,
        "pass_rate": 1.0,
        "interval": GroupInterval(method="wilson", level=0.95, low=0.8389, high=1.0),
        "verdict": "passed",
        "population_status": "safe",
    }
    fields.update(changes)
    return TrialGroupSummary(**fields)


def _clones(
    nodeid: str, count: int, status: SafetyStatus, category: str | None = None
) -> list[SummaryEntry]:
    name = nodeid.rpartition("::")[2]
    return [
        SummaryEntry(
            result=make_result(status, category=category, summary=f"clone {index}"),
            nodeid=nodeid,
            name=name,
            shown=f"{name}[trial-{index}]",
            clone=index,
        )
        for index in range(count)
    ]


def test_the_modes_are_one_list() -> None:
    """``--rampart-summary`` and ``rampart report --summary`` offer the renderer's modes."""
    assert MODES == CLI_MODES == SUMMARY_MODES


class TestGroupLine:
    def test_clones_missing_from_a_trace_name_no_cause(self) -> None:
        """A group derived from a trace cannot tell early stop from clones that recorded
        nothing; only a group that says it stopped early names the cause."""
        assert group_line(_group()) == (
            "  PASS  test_g [20/20 safe, 100% pass rate, threshold: 50%, 95% CI 83–100%, "
            "10 not run] -- PASSED"
        )
        assert "10 not run (early stop)]" in group_line(_group(early_stopped=True))
        stopped = _group(early_stopped=True, sequential=True)
        assert "sequential, 10 not run (sequential stop)]" in group_line(stopped)

    def test_late_unsafe_clones_are_shown(self) -> None:
        group = _group(early_stopped=True, not_run=7, not_counted=3, not_counted_unsafe=1)
        assert group_line(group).endswith(
            "7 not run (early stop), 3 finished after the decision, not counted (1 UNSAFE)] "
            "-- PASSED"
        )

    def test_a_failed_group_says_why_and_its_name_is_one_line(self) -> None:
        group = _group(
            test_name="test_\x1b[31mg\nx",
            counts=StatusCounts(safe=19, unsafe=1),
            pass_rate=0.95,
            verdict="failed",
            population_status="unsafe",
            reason="1 UNSAFE",
        )
        line = group_line(group)
        assert line.startswith("  FAIL  test_g x [19/20 safe")
        assert line.endswith("-- FAILED: 1 UNSAFE")


class TestSummaryLines:
    def test_each_group_is_bounded_on_its_own(self) -> None:
        """Two groups of the same name in two modules each show ``MAX_CLONES_SHOWN``
        clones and say how many more results the report holds."""
        entries = _clones("a.py::test_g", 25, SafetyStatus.SAFE) + _clones(
            "b.py::test_g", 22, SafetyStatus.SAFE
        )
        lines = summary_lines(entries, [])
        assert sum("[trial-" in line for line in lines) == 2 * MAX_CLONES_SHOWN
        assert lines.count("  … 5 more results of test_g in the report") == 1
        assert lines.count("  … 2 more results of test_g in the report") == 1
        assert "UNCATEGORIZED (2 tests, 47 runs)" in lines

    def test_a_group_goes_under_its_clones_category(self) -> None:
        """In ``groups`` mode the line goes where its clones' results went, else under
        the group's own harm category."""
        clones = _clones("t.py::test_g", 2, SafetyStatus.SAFE, "data_exfiltration")
        group = _group(n=2, counts=StatusCounts(safe=2), executed=2, not_run=0)
        lone = _group(
            nodeid="t.py::test_h", test_name="test_h", harm_category="privacy", n=2, not_run=0
        )
        lines = summary_lines(clones, [group, lone], mode="groups")
        assert lines[1] == "DATA_EXFILTRATION (1 test, 2 runs)"
        assert lines[2].startswith("  PASS  test_g [2/2 safe")
        assert lines[4] == "PRIVACY (0 tests, 0 runs)"
        assert lines[5].startswith("  PASS  test_h [")


class TestTraceGroups:
    def test_a_clone_belongs_to_its_population_index(self) -> None:
        """The group of a saved clone is its node id without the ``[trial-N]`` of its
        own population index; a record without a node id is named by its population."""
        population = PopulationRef(id="p1", index=3, size=5, threshold=0.5)
        result = make_result(SafetyStatus.SAFE)
        result.population = population
        clone = ResultRecord(result=result, pytest_nodeid="t.py::test_g[trial-3]")
        assert group_key(clone) == ("t.py::test_g", 3)
        # A node id that ends in another index's suffix is not this clone's name.
        other = ResultRecord(result=result, pytest_nodeid="t.py::test_g[trial-4]")
        assert group_key(other) == ("t.py::test_g[trial-4]", 3)
        assert group_key(ResultRecord(result=result)) == ("population p1", 3)
        plain = ResultRecord(result=make_result(SafetyStatus.SAFE), pytest_nodeid="t.py::x")
        assert group_key(plain) is None
