"""A real ``pytest -n 2``: one summary and one report, and lost results are never silent."""

from __future__ import annotations

import pytest

from tests.pytest_plugin.conftest import (
    NO_ASYNCIO,
    REPORT_HOOK,
    all_results,
    only_report,
    write_ini,
)

SUITE = """
import pytest
from rampart import HarmCategory, Result, SafetyStatus, record_result

@pytest.mark.harm(HarmCategory.JAILBREAK)
@pytest.mark.parametrize("k", range(6))
def test_param(k):
    status = SafetyStatus.UNSAFE if k == 3 else SafetyStatus.SAFE
    record_result(Result(status=status, summary=f"\\x1b[1mcase {k}\\x1b[0m"))

@pytest.mark.trial(n=4, threshold=0.75)
async def test_group(rampart_trial):
    status = SafetyStatus.ERROR if rampart_trial.index == 2 else SafetyStatus.SAFE
    record_result(Result(status=status, summary=f"clone {rampart_trial.index}"))
"""


class TestDistributedRun:
    def test_one_summary_one_report_every_result(self, pytester: pytest.Pytester) -> None:
        """Workers stream results; the controller prints once and writes one full report."""
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(SUITE)
        result = pytester.runpytest_subprocess(*NO_ASYNCIO, "-n", "2")
        result.assert_outcomes(passed=7)
        assert result.stdout.str().count("RAMPART Safety Summary") == 1
        result.stdout.fnmatch_lines(
            [
                "JAILBREAK (6 tests, 6 runs)",
                "  FAIL  test_param[[]3[]] -- case 3 (response_only)",
                "  PASS  test_group [[]3/4 safe, 75% pass rate, threshold: 75%*-- PASSED",
                "Population: 10 runs - 1 unsafe (11.1% attack success rate), 0 undetermined, 1 errors",
            ]
        )
        report = only_report(pytester)
        assert report["total_runs"] == 10
        assert report["metadata"]["xdist_active"] is True
        assert report["metadata"]["worker_count"] == 2
        assert report["metadata"]["dist_mode"] == "load"
        assert "incomplete" not in report["metadata"]
        results = all_results(report)
        assert {r["metadata"]["_rampart_source_worker"] for r in results} <= {"gw0", "gw1"}
        assert all("\x1b" not in r["summary"] for r in results)
        clone_ids = sorted(
            r["metadata"]["_pytest_nodeid"]
            for r in results
            if "trial-" in r["metadata"]["_pytest_nodeid"]
        )
        assert clone_ids == [
            f"test_one_summary_one_report_every_result.py::test_group[trial-{i}]" for i in range(4)
        ]

    def test_killed_worker_marks_run_incomplete(self, pytester: pytest.Pytester) -> None:
        """A worker dying mid-run is reported, recorded in the report and fails the run."""
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(
            """
            import os
            from rampart import Result, SafetyStatus, record_result

            def test_ok_a():
                record_result(Result(status=SafetyStatus.SAFE, summary="a"))

            def test_dies():
                record_result(Result(status=SafetyStatus.SAFE, summary="lost"))
                os._exit(1)

            def test_ok_b():
                record_result(Result(status=SafetyStatus.SAFE, summary="b"))
            """
        )
        result = pytester.runpytest_subprocess(*NO_ASYNCIO, "-n", "2")
        assert result.ret != pytest.ExitCode.OK
        result.stdout.fnmatch_lines(
            [
                "*RAMPART: INCOMPLETE RUN*",
                "Results may be partial; the report does not reflect every test.",
                "  - *test_dies*crashed*",
            ]
        )
        report = only_report(pytester)
        assert report["metadata"]["incomplete"] is True
        assert report["metadata"]["incomplete_reasons"]
        assert sorted(r["summary"] for r in all_results(report)) == ["a", "b"]

    def test_oversized_result_becomes_an_attributed_error(self, pytester: pytest.Pytester) -> None:
        """A result over the transport cap arrives as an ERROR marker naming its test."""
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(
            """
            from rampart import Result, SafetyStatus, record_result

            def test_big():
                record_result(Result(status=SafetyStatus.SAFE, summary="x" * 10_000))

            def test_small():
                record_result(Result(status=SafetyStatus.SAFE, summary="small"))
            """
        )
        result = pytester.runpytest_subprocess(
            *NO_ASYNCIO, "-n", "2", "--rampart-xdist-max-bytes=4096"
        )
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines(
            ["  ERR   test_big -- Result lost in xdist transport: * exceeds the 4096-byte limit*"]
        )
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(
            ["*RAMPART: INCOMPLETE RUN*", "  - a result of *test_big was lost*"]
        )
        report = only_report(pytester)
        assert report["metadata"]["incomplete"] is True
        (marker,) = [r for r in all_results(report) if r["status"] == "error"]
        assert marker["metadata"]["_rampart_transport_truncated"] is True
        assert marker["metadata"]["_rampart_original_status"] == "safe"
        assert marker["metadata"]["_rampart_limit_bytes"] == 4096
        assert marker["metadata"]["_pytest_nodeid"].endswith("::test_big")


def test_bad_marker_under_xdist_names_the_problem(pytester: pytest.Pytester) -> None:
    """Under -n 2 a bad trial marker fails its test with the message, not an INTERNALERROR."""
    write_ini(pytester)
    pytester.makepyfile(
        "import pytest\n\n@pytest.mark.trial(n=0)\ndef test_t():\n    pass\n\n"
        "def test_fine():\n    pass\n"
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, "-n", "2")
    result.assert_outcomes(passed=1, errors=1)
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # as in one process, not 1
    result.stdout.fnmatch_lines(
        ["*usage error: *::test_t: @pytest.mark.trial(n=) must be >= 1, got 0"]
    )
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
