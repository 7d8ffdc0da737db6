"""The report's typed run sections: ``TrialGroupSummary`` and ``RunInfo``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rampart.core import SafetyStatus
from rampart.reporting import (
    GroupInterval,
    RunInfo,
    StatusCounts,
    TestRunReport,
    TrialGroupSummary,
)
from tests._builders import make_result


def make_group(**changes: Any) -> TrialGroupSummary:
    fields: dict[str, Any] = {
        "nodeid": "tests/test_x.py::test_g",
        "test_name": "test_g",
        "harm_category": "data_exfiltration",
        "n": 10,
        "threshold": 0.9,
        "counts": StatusCounts(safe=6, unsafe=0, undetermined=1, error=2, no_result=1),
        "executed": 10,
        "pass_rate": 0.6,
        "interval": GroupInterval(method="wilson", level=0.95, low=0.31, high=0.83),
        "verdict": "failed",
        "population_status": "error",
        "reason": "pass rate 60% below threshold 90% (2 ERROR, 1 UNDETERMINED, 1 no result)",
    }
    fields.update(changes)
    return TrialGroupSummary(**fields)


class TestTrialGroupSummary:
    def test_json_keys_in_field_order_with_extension_fields(self) -> None:
        """The JSON object has every key, including the ones a confidence-aware verdict
        will use, at their count-rule values."""
        data = make_group().to_json()
        assert list(data) == [
            "nodeid",
            "test_name",
            "harm_category",
            "n",
            "threshold",
            "counts",
            "executed",
            "not_run",
            "pass_rate",
            "interval",
            "verdict",
            "population_status",
            "reason",
            "early_stopped",
            "confidence",
            "max_unsafe",
            "sequential",
            "not_counted",
            "not_counted_unsafe",
            "worker",
            "concurrency",
            "interrupted",
        ]
        assert data["concurrency"] is None  # a fixed concurrency: nothing to say
        assert data["interrupted"] is False  # it finished
        assert data["counts"] == {
            "safe": 6,
            "unsafe": 0,
            "undetermined": 1,
            "error": 2,
            "no_result": 1,
        }
        assert data["interval"] == {"method": "wilson", "level": 0.95, "low": 0.31, "high": 0.83}
        assert (data["confidence"], data["max_unsafe"], data["sequential"]) == (None, 0, False)
        assert (data["not_counted"], data["not_counted_unsafe"]) == (0, 0)
        json.dumps(data, allow_nan=False)

    def test_round_trip_and_unknown_keys_ignored(self) -> None:
        """``from_json`` reads what ``to_json`` wrote; a key from a newer report is ignored."""
        group = make_group(not_run=3, executed=7, counts=StatusCounts(safe=7), early_stopped=True)
        data = group.to_json()
        data["a_future_key"] = {"x": 1}
        assert TrialGroupSummary.from_json(data) == group

    def test_inconclusive_is_a_verdict_the_format_already_holds(self) -> None:
        group = make_group(verdict="inconclusive", confidence=0.95, reason="interval spans 90%")
        assert TrialGroupSummary.from_json(group.to_json()).verdict == "inconclusive"
        assert not group.passed

    @pytest.mark.parametrize(
        ("changes", "error", "match"),
        [
            ({"verdict": "maybe"}, ValueError, "verdict must be one of 'passed'"),
            ({"n": 0}, ValueError, "n must be >= 1"),
            ({"threshold": 1.5}, ValueError, "threshold must be a number in"),
            ({"executed": 9}, ValueError, "counts must add up to executed"),
            ({"population_status": "fine"}, ValueError, "population_status must be one of"),
            ({"early_stopped": 1}, TypeError, "early_stopped must be"),
            ({"not_counted": -1}, ValueError, "not_counted must be non-negative"),
            ({"not_counted_unsafe": -1}, ValueError, "not_counted_unsafe must be non-negative"),
            (
                {"verdict": "inconclusive"},
                ValueError,
                r"verdict must be 'passed' or 'failed' without a confidence",
            ),
        ],
    )
    def test_bad_values_are_refused(
        self, changes: dict[str, Any], error: type[Exception], match: str
    ) -> None:
        with pytest.raises(error, match=match):
            make_group(**changes)

    def test_from_json_names_the_class_and_field(self) -> None:
        data = make_group().to_json()
        data["n"] = -1
        with pytest.raises(ValueError, match=r"TrialGroupSummary.from_json: .*n must be >= 1"):
            TrialGroupSummary.from_json(data)
        with pytest.raises(
            TypeError, match=r"TrialGroupSummary.from_json: data must be a dict, got \[\]"
        ):
            TrialGroupSummary.from_json([])

    def test_counts_refuse_negative_numbers(self) -> None:
        with pytest.raises(ValueError, match="StatusCounts: error must be non-negative"):
            StatusCounts(error=-1)

    def test_interval_bounds_are_ordered(self) -> None:
        with pytest.raises(
            ValueError, match=r"GroupInterval: low must be <= high \(0\.2\), got 0\.8"
        ):
            GroupInterval(method="wilson", level=0.95, low=0.8, high=0.2)


class TestRunInfo:
    def test_defaults_mean_unknown_and_round_trip(self) -> None:
        info = RunInfo()
        data = info.to_json()
        assert data["exit_status"] is None
        assert data["interrupted"] is False
        assert data["anyio_backends"] == []
        assert RunInfo.from_json(data) == info

    def test_bad_values_are_refused(self) -> None:
        with pytest.raises(TypeError, match="RunInfo: interrupted must be"):
            RunInfo(interrupted="yes")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="RunInfo: duration_seconds"):
            RunInfo(duration_seconds=-1.0)


class TestReportCarriesTheSections:
    def test_defaults_outside_pytest(self) -> None:
        report = TestRunReport.from_results([make_result(SafetyStatus.SAFE)], duration_seconds=2.0)
        assert report.trial_groups == []
        assert report.run == RunInfo(duration_seconds=2.0)

    def test_given_sections_are_kept(self) -> None:
        group = make_group()
        run = RunInfo(exit_status=1, interrupted=True)
        report = TestRunReport(trial_groups=(group,), run=run)
        assert report.trial_groups == [group]
        assert report.run is run

    def test_clones_without_a_result_count_in_the_total(self) -> None:
        """Every clone that ran is counted: ``total_runs`` is the results plus the
        groups' no-result clones, which have no entry in ``results``."""
        group = make_group()  # 1 of its 10 clones recorded nothing
        report = TestRunReport.from_results(
            [make_result(SafetyStatus.SAFE)] * 9, trial_groups=[group, make_group()]
        )
        assert (report.total_runs, report.no_result, len(report.results)) == (11, 2, 9)
        assert report.population_summary().total_runs == 9  # statistics over results
        with pytest.raises(ValueError, match=r"^TestRunReport: no_result must be 2, "):
            TestRunReport(trial_groups=[group, group], no_result=0)

    def test_wrong_types_are_refused(self) -> None:
        with pytest.raises(TypeError, match=r"trial_groups\[0\] must be a TrialGroupSummary"):
            TestRunReport(trial_groups=[{"nodeid": "x"}])  # type: ignore[list-item]
        with pytest.raises(TypeError, match="TestRunReport: run must be a RunInfo"):
            TestRunReport(run={"exit_status": 0})  # type: ignore[arg-type]


class TestGroupConcurrencyAndIncomplete:
    def test_concurrency_round_trips_and_is_checked(self) -> None:
        stats = {
            "final": 12,
            "peak": 16,
            "peak_in_flight": 16,
            "cuts": 1,
            "throttle_cuts": 1,
            "throttles": 2,
        }
        group = make_group(concurrency=stats)
        assert TrialGroupSummary.from_json(group.to_json()) == group
        with pytest.raises(ValueError, match="concurrency"):
            make_group(concurrency={"final": -1})

    def test_incomplete_is_a_verdict_a_saved_run_may_state(self) -> None:
        group = make_group(verdict="incomplete", reason="2 of 40 clones are recorded")
        assert not group.passed
        assert TrialGroupSummary.from_json(group.to_json()).verdict == "incomplete"
