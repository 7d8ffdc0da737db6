"""The run ledger: attribution travels as data next to each result, stamped only in the report.

Clone indices, positions and workers are never parsed back out of nodeids or metadata,
so nothing a test's own name or a result's own metadata says can change where a result
is attributed, in what order it is reported, or whether the run counts as complete.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pytest_plugin.conftest import (
    NO_ASYNCIO,
    REPORT_HOOK,
    all_results,
    only_report,
    write_ini,
)

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_clones_are_reported_in_numeric_order(pytester: pytest.Pytester) -> None:
    """Twelve clones read trial-0 .. trial-11 (not trial-10 after trial-1), fixtures first,
    each clone's population index matching its suffix."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(
        """
        import anyio
        import pytest
        from rampart import Result, SafetyStatus, record_result

        # Module-scoped: set up once for the item (a function-scoped fixture is set
        # up per clone, and what it records belongs to that clone).
        @pytest.fixture(scope="module")
        def baseline():
            record_result(Result(status=SafetyStatus.SAFE, summary="baseline"))

        @pytest.mark.trial(n=12, concurrency=12)
        async def test_t(baseline, rampart_trial):
            # Finish in reverse index order, so completion order is not report order.
            await anyio.sleep(0.01 * (12 - rampart_trial.index))
            for k in range(2):
                record_result(
                    Result(status=SafetyStatus.SAFE, summary=f"c{rampart_trial.index}-{k}")
                )
        """
    )
    result = pytester.runpytest(*NO_ASYNCIO)
    result.assert_outcomes(passed=1)
    results = all_results(only_report(pytester))
    base = "test_clones_are_reported_in_numeric_order.py::test_t"
    assert [
        (r["metadata"]["_pytest_nodeid"], r["metadata"]["_rampart_result_index"]) for r in results
    ] == [
        (base, 0),
        *[(f"{base}[trial-{i}]", k) for i in range(12) for k in range(2)],
    ]
    assert "population" not in results[0]
    assert [r["population"]["index"] for r in results[1:]] == [
        i for i in range(12) for _ in range(2)
    ]
    lines = [line for line in result.stdout.lines if " -- c" in line]
    assert [line.split()[1] for line in lines] == [
        f"test_t[trial-{i}]" for i in range(12) for _ in range(2)
    ]


def test_a_name_that_looks_like_a_clone_is_a_plain_test(pytester: pytest.Pytester) -> None:
    """A parametrize id such as ``trial-1`` is part of the test's name, not a clone index."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(
        """
        import pytest
        from rampart import Result, SafetyStatus, record_result

        @pytest.mark.parametrize("case", ["trial-1", "trial-0"])
        def test_p(case):
            record_result(Result(status=SafetyStatus.SAFE, summary=case))
        """
    )
    result = pytester.runpytest(*NO_ASYNCIO)
    result.assert_outcomes(passed=2)
    results = all_results(only_report(pytester))
    assert [r["metadata"]["_pytest_test_name"] for r in results] == [
        "test_p[trial-0]",
        "test_p[trial-1]",
    ]
    assert [r.get("population") for r in results] == [None, None]
    result.stdout.no_fnmatch_line("*safe, * pass rate*")  # no trial group line


@pytest.mark.parametrize("mode", [["-p", "no:xdist"], ["-n", "2"]], ids=["single", "xdist"])
def test_results_own_bookkeeping_keys_change_nothing(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    """A result replayed from an old report keeps its keys out of the picture: it is
    attributed to the test that recorded it, and an old loss flag does not make this run
    incomplete, with and without xdist."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(
        """
        from rampart import Result, SafetyStatus, record_result

        def test_replay():
            record_result(
                Result(
                    status=SafetyStatus.ERROR,
                    summary="Result lost in xdist transport: replayed",
                    metadata={
                        "_pytest_nodeid": "old.py::test_old[trial-7]",
                        "_pytest_test_name": "test_old[trial-7]",
                        "_rampart_result_index": 9,
                        "_rampart_source_worker": "gw9",
                        "_rampart_transport_truncated": True,
                        "scenario_id": "receipt-3",
                    },
                )
            )
        """
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, *mode)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.no_fnmatch_line("*INCOMPLETE RUN*")
    report = only_report(pytester)
    assert "incomplete" not in report["metadata"]
    (entry,) = all_results(report)
    metadata = entry["metadata"]
    assert metadata["_pytest_nodeid"] == (
        "test_results_own_bookkeeping_keys_change_nothing.py::test_replay"
    )
    assert metadata["_pytest_test_name"] == "test_replay"
    assert metadata["_rampart_result_index"] == 0
    assert metadata["scenario_id"] == "receipt-3"
    if mode == ["-n", "2"]:
        assert metadata["_rampart_source_worker"] in {"gw0", "gw1"}


def test_every_result_names_its_worker_even_a_lost_one(pytester: pytest.Pytester) -> None:
    """Under ``-n 2`` each result, and the marker standing in for a lost one, carries the
    worker that ran it, and positions count per test."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(
        """
        import os
        from rampart import Result, SafetyStatus, record_result

        def test_big():
            record_result(Result(status=SafetyStatus.SAFE, summary="small " + os.environ["PYTEST_XDIST_WORKER"]))
            record_result(Result(status=SafetyStatus.SAFE, summary="x" * 10_000))

        def test_other():
            record_result(Result(status=SafetyStatus.SAFE, summary=os.environ["PYTEST_XDIST_WORKER"]))
        """
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, "-n", "2", "--rampart-xdist-max-bytes=4096")
    result.assert_outcomes(passed=2)
    results = all_results(only_report(pytester))
    by_test = {}
    for entry in results:
        by_test.setdefault(entry["metadata"]["_pytest_test_name"], []).append(entry)
    big = sorted(by_test["test_big"], key=lambda r: r["metadata"]["_rampart_result_index"])
    assert [r["metadata"]["_rampart_result_index"] for r in big] == [0, 1]
    worker = big[0]["summary"].removeprefix("small ")
    assert big[1]["metadata"]["_rampart_transport_truncated"] is True
    assert {r["metadata"]["_rampart_source_worker"] for r in big} == {worker}
    (other,) = by_test["test_other"]
    assert other["metadata"]["_rampart_source_worker"] == other["summary"]


def test_project_run_is_quiet_but_a_user_run_is_not(pytester: pytest.Pytester) -> None:
    """The project's own configuration keeps the plugin out of its unit tests (no safety
    summary of their results); the same test under a plain configuration gets one."""
    test_file = pytester.makepyfile(
        """
        from rampart import Result, SafetyStatus, record_result

        def test_records():
            record_result(Result(status=SafetyStatus.ERROR, summary="OSError: x"))
        """
    )
    project = pytester.runpytest_subprocess(
        "-c", str(PYPROJECT), "--rootdir", str(pytester.path), str(test_file)
    )
    project.assert_outcomes(passed=1)
    project.stdout.no_fnmatch_line("*RAMPART*")
    user = pytester.runpytest_subprocess(*NO_ASYNCIO)
    user.assert_outcomes(passed=1)
    user.stdout.fnmatch_lines(
        ["*= RAMPART Safety Summary =*", "  ERR   test_records -- OSError: x*"]
    )
