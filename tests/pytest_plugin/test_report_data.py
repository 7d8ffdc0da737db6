"""The report's ``trial_groups`` and ``run`` sections, filled by real pytest runs."""

from __future__ import annotations

import platform

import pytest

import rampart
from tests.pytest_plugin.conftest import NO_ASYNCIO, REPORT_HOOK, only_report, write_ini

SUITE = """
import pytest
from rampart import HarmCategory, Result, SafetyStatus, record_result

@pytest.mark.harm(HarmCategory.DATA_EXFILTRATION)
@pytest.mark.trial(n=10, threshold=0.9)
async def test_leaky(rampart_trial):
    status = SafetyStatus.UNSAFE if rampart_trial.index in (2, 5) else SafetyStatus.SAFE
    if rampart_trial.index == 7:
        status = SafetyStatus.ERROR
    record_result(Result(status=status, summary=f"clone {rampart_trial.index}"))

@pytest.mark.trial(n=4)
def test_solid(rampart_trial):
    record_result(Result(status=SafetyStatus.SAFE, summary="ok"))

async def test_plain():
    record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
"""


def _groups_by_name(report: dict[str, object]) -> dict[str, dict[str, object]]:
    groups = report["trial_groups"]
    assert isinstance(groups, list)
    return {group["test_name"]: group for group in groups}


class TestTrialGroupsSection:
    def test_groups_with_verdict_reason_and_interval(self, pytester: pytest.Pytester) -> None:
        """Each trial group is in the JSON report with its counts, verdict and reason."""
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(test_suite=SUITE)
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=2, failed=1)
        report = only_report(pytester)
        groups = _groups_by_name(report)
        assert list(groups) == ["test_leaky", "test_solid"]  # nodeid order
        leaky = groups["test_leaky"]
        assert leaky["nodeid"] == "test_suite.py::test_leaky"
        assert leaky["harm_category"] == "data_exfiltration"
        assert (leaky["n"], leaky["threshold"], leaky["executed"], leaky["not_run"]) == (
            10,
            0.9,
            10,
            0,
        )
        assert leaky["counts"] == {
            "safe": 7,
            "unsafe": 2,
            "undetermined": 0,
            "error": 1,
            "no_result": 0,
        }
        assert leaky["pass_rate"] == 0.7
        assert leaky["verdict"] == "failed"
        assert leaky["population_status"] == "unsafe"
        assert (
            leaky["reason"]
            == "2 UNSAFE (any UNSAFE clone fails a group; max_unsafe= tolerates some), 1 ERROR"
        )
        assert leaky["early_stopped"] is False
        interval = leaky["interval"]
        assert interval["method"] == "wilson"
        assert interval["low"] < 0.7 < interval["high"]
        solid = groups["test_solid"]
        assert (solid["verdict"], solid["reason"], solid["harm_category"]) == (
            "passed",
            None,
            None,
        )
        # The same reason is on the terminal line.
        result.stdout.fnmatch_lines(
            [
                "  FAIL  test_leaky [[]7/10 safe*] -- FAILED: 2 UNSAFE (any UNSAFE clone fails a group; max_unsafe= tolerates some), 1 ERROR"
            ]
        )

    def test_early_stopped_group_counts_clones_not_run(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(
            """
            import pytest
            from rampart import Result, SafetyStatus, record_result

            @pytest.mark.trial(n=6, early_stop=True)
            def test_stops(rampart_trial):
                record_result(Result(status=SafetyStatus.UNSAFE, summary="leak"))
            """
        )
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(failed=1)
        (group,) = only_report(pytester)["trial_groups"]
        assert (group["executed"], group["not_run"], group["early_stopped"]) == (1, 5, True)
        assert (
            group["reason"]
            == "1 UNSAFE (any UNSAFE clone fails a group; max_unsafe= tolerates some)"
        )

    def test_ci_gate_on_the_report(self, pytester: pytest.Pytester) -> None:
        """What the documented jq gate computes: failed groups, and a run that went wrong."""
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(test_suite=SUITE)
        pytester.runpytest(*NO_ASYNCIO)
        report = only_report(pytester)
        failed = [g["nodeid"] for g in report["trial_groups"] if g["verdict"] != "passed"]
        run = report["run"]
        assert failed == ["test_suite.py::test_leaky"]
        assert run["interrupted"] is False
        assert run["incomplete"] is False


class TestRunSection:
    def test_run_facts(self, pytester: pytest.Pytester) -> None:
        """Exit status, versions, backends and an ISO start time, with no xdist."""
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(test_suite=SUITE)
        result = pytester.runpytest(*NO_ASYNCIO)
        run = only_report(pytester)["run"]
        assert run["exit_status"] == result.ret == 1
        assert run["rampart_version"] == rampart.__version__
        assert run["pytest_version"] == pytest.__version__
        assert run["python_version"] == platform.python_version()
        assert run["anyio_backends"] == ["asyncio"]
        assert (run["xdist_workers"], run["dist_mode"]) == (0, None)
        assert run["started_at"].endswith("+00:00")
        assert run["duration_seconds"] == only_report(pytester)["duration_seconds"]
        assert (run["incomplete"], run["incomplete_reasons"]) == (False, [])

    def test_passing_run_exit_status_zero(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(
            """
            from rampart import Result, SafetyStatus, record_result

            def test_ok():
                record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
            """
        )
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=1)
        assert only_report(pytester)["run"]["exit_status"] == 0

    def test_under_xdist_groups_and_backends_come_from_the_workers(
        self, pytester: pytest.Pytester
    ) -> None:
        """Harm category, worker and both backends cross from the workers; the run says 2."""
        write_ini(pytester)
        pytester.makeconftest(
            REPORT_HOOK
            + """
import pytest

@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param
"""
        )
        pytester.makepyfile(test_suite=SUITE)
        result = pytester.runpytest_subprocess(*NO_ASYNCIO, "-n", "2")
        result.assert_outcomes(passed=3, failed=2)
        report = only_report(pytester)
        run = report["run"]
        assert (run["xdist_workers"], run["dist_mode"]) == (2, "load")
        assert run["anyio_backends"] == ["asyncio", "trio"]
        names = sorted(g["test_name"] for g in report["trial_groups"])
        assert names == ["test_leaky[asyncio]", "test_leaky[trio]", "test_solid"]
        for group in report["trial_groups"]:
            assert group["worker"] in {"gw0", "gw1"}
            if group["test_name"].startswith("test_leaky"):
                assert group["harm_category"] == "data_exfiltration"
                assert (
                    group["reason"]
                    == "2 UNSAFE (any UNSAFE clone fails a group; max_unsafe= tolerates some), 1 ERROR"
                )
