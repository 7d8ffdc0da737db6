"""``--rampart-resume``: a stopped run completes without running what finished again.

The first run is stopped by a clone raising KeyboardInterrupt (the same stop as Ctrl-C,
tested with real signals in test_interrupts); the resumed run must run only what the
journal lacks, and its report must be the union, equal in verdicts and counts to a run
that was never stopped, saying which results came from which run.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from tests.pytest_plugin._subprocess import journal_files
from tests.pytest_plugin.conftest import (
    NO_ASYNCIO,
    REPORT_HOOK,
    all_results,
    reports,
    write_ini,
)

if TYPE_CHECKING:
    from pathlib import Path

# STOP_AT (a file) names the clone that interrupts the run; each clone that runs leaves
# a ran-<index> file, so a test can see what ran.
SUITE = """
import pathlib
import pytest
from rampart import Result, SafetyStatus, record_result

HERE = pathlib.Path(__file__).parent

def stop_at():
    flag = HERE / "STOP_AT"
    return int(flag.read_text()) if flag.exists() else None

def test_plain_pass():
    record_result(Result(status=SafetyStatus.SAFE, summary="plain pass"))

def test_plain_fail():
    record_result(Result(status=SafetyStatus.UNSAFE, summary="plain finding"))
    assert False, "the agent leaked"

def test_plain_nothing():
    (HERE / "ran-nothing").touch()

@pytest.mark.trial(n=12, concurrency=1, threshold=0.5)
def test_group(rampart_trial):
    k = rampart_trial.index
    (HERE / f"ran-{k}").touch()
    if k == stop_at():
        raise KeyboardInterrupt
    status = SafetyStatus.ERROR if k % 4 == 3 else SafetyStatus.SAFE
    record_result(Result(status=status, summary=f"clone {k}"))
    assert k != 5, "clone 5 fails its own check"

def test_z_after():
    record_result(Result(status=SafetyStatus.SAFE, summary="after"))
"""


def _ran(directory: Path) -> set[str]:
    found = {path.name.removeprefix("ran-") for path in directory.glob("ran-*")}
    for path in directory.glob("ran-*"):
        path.unlink()
    return found


def _digest(report: dict[str, Any]) -> tuple[Counter[tuple[str, str, str]], dict[str, int]]:
    """What must match an uninterrupted run: every result's test, status and summary,
    and the counts."""
    results = Counter(
        (r["metadata"]["_pytest_nodeid"], r["status"], r["summary"]) for r in all_results(report)
    )
    counts = {key: report[key] for key in ("total_runs", "passed", "failed", "errors")}
    return results, counts


def _group_line(output: str) -> str:
    return next(line for line in output.splitlines() if "  test_group [" in line)


def test_resume_runs_only_what_is_missing_and_reports_the_union(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(SUITE)
    # The reference: a run never stopped.
    reference = pytester.runpytest(*NO_ASYNCIO)
    reference.assert_outcomes(passed=4, failed=1)
    expected = _digest(reports(pytester)[-1])
    _ran(pytester.path)
    for path in pytester.path.glob("reports/*"):
        path.unlink()
    for path in journal_files(pytester.path):
        path.unlink()

    (pytester.path / "STOP_AT").write_text("7")
    stopped = pytester.runpytest(*NO_ASYNCIO, no_reraise_ctrlc=True)
    assert stopped.ret == pytest.ExitCode.INTERRUPTED
    first_report = reports(pytester)[-1]
    first_run = first_report["metadata"]["run_id"]
    assert first_report["metadata"]["interrupted"] is True
    assert _ran(pytester.path) == {"nothing", *map(str, range(8))}

    (pytester.path / "STOP_AT").unlink()
    resumed = pytester.runpytest(*NO_ASYNCIO, "--rampart-resume")
    # Clones 0-6 finished (7 was stopped): only 7-11 run; test_plain_nothing recorded
    # nothing, so it runs again; the finished plain tests do not.
    assert _ran(pytester.path) == {"nothing", *map(str, range(7, 12))}
    resumed.assert_outcomes(passed=3, skipped=1, errors=1)
    resumed.stdout.fnmatch_lines(
        [
            "*rampart resume: failed in run * (not run again): call: AssertionError: the agent*",
            f"Resumed from *: 9 from run {first_run[:12]} (not run again)",
        ]
    )
    final = reports(pytester)[-1]
    assert _digest(final) == expected
    assert _group_line(resumed.stdout.str()) == _group_line(reference.stdout.str())
    assert final["metadata"]["resumed"]["runs"] == {first_run: 9}
    origins = Counter(
        r["metadata"].get("_rampart_resumed_from", "this run") for r in all_results(final)
    )
    assert origins == {first_run: 9, "this run": 6}
    # Resuming appends to the one journal, which now holds the whole run.
    (journal,) = journal_files(pytester.path)
    assert final["metadata"]["journal"] == str(journal)


def test_resume_under_xdist(pytester: pytest.Pytester) -> None:
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(SUITE)
    (pytester.path / "STOP_AT").write_text("7")
    stopped = pytester.runpytest_subprocess(*NO_ASYNCIO, "-n", "2")
    assert stopped.ret == pytest.ExitCode.INTERRUPTED, stopped.stdout.str()
    ran_first = _ran(pytester.path)
    assert {str(k) for k in range(8)} <= ran_first
    (pytester.path / "STOP_AT").unlink()
    resumed = pytester.runpytest_subprocess(*NO_ASYNCIO, "-n", "2", "--rampart-resume")
    assert resumed.ret == pytest.ExitCode.TESTS_FAILED, resumed.stdout.str()
    ran_now = _ran(pytester.path) - {"nothing"}
    assert ran_now == {str(k) for k in range(7, 12)}
    final = reports(pytester)[-1]
    clones = Counter(
        r["metadata"]["_pytest_nodeid"].split("::")[1]
        for r in all_results(final)
        if "[trial-" in r["metadata"]["_pytest_nodeid"]
    )
    assert sorted(clones) == sorted(f"test_group[trial-{k}]" for k in range(12))
    assert set(clones.values()) == {1}


def test_changed_test_code_is_not_reused(pytester: pytest.Pytester) -> None:
    """A test whose source or marker arguments changed runs again, with a message."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(SUITE)
    (pytester.path / "STOP_AT").write_text("7")
    pytester.runpytest(*NO_ASYNCIO, no_reraise_ctrlc=True)
    _ran(pytester.path)
    (pytester.path / "STOP_AT").unlink()
    pytester.makepyfile(
        SUITE.replace("threshold=0.5", "threshold=0.4").replace(
            '"plain pass"', '"plain pass, reworded"'
        )
    )
    resumed = pytester.runpytest(*NO_ASYNCIO, "--rampart-resume")
    assert _ran(pytester.path) == {"nothing", *map(str, range(12))}
    resumed.stdout.fnmatch_lines(
        [
            "RAMPART WARNING: rampart resume: *::test_plain_pass changed since run *its "
            "journaled results are not reused and it runs again",
            "RAMPART WARNING: rampart resume: *::test_group changed since run *",
        ]
    )
    summaries = {r["summary"] for r in all_results(reports(pytester)[-1])}
    assert "plain pass, reworded" in summaries
    assert "plain pass" not in summaries


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rampart-resume"], "*--rampart-resume: no run journal (rampart-journal-*.jsonl)*"),
        (
            ["--rampart-resume=nowhere.jsonl"],
            "*--rampart-resume must be an existing run journal file*got 'nowhere.jsonl'*",
        ),
        (
            ["--rampart-resume=off", "--rampart-journal=off"],
            "*--rampart-resume must be an existing run journal*",
        ),
    ],
)
def test_resume_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    write_ini(pytester)
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*NO_ASYNCIO, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_crashed_clone_runs_again(pytester: pytest.Pytester) -> None:
    """A clone that crashed (a bug in the test, not a verdict) is not reused: resuming
    runs it again, and only it."""
    write_ini(pytester)
    pytester.makepyfile(
        """
        import pathlib
        import pytest
        from rampart import Result, SafetyStatus, record_result

        HERE = pathlib.Path(__file__).parent

        @pytest.mark.trial(n=4, concurrency=1)
        def test_group(rampart_trial):
            (HERE / f"ran-{rampart_trial.index}").touch()
            record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
            if rampart_trial.index == 2 and (HERE / "CRASH").exists():
                raise RuntimeError("fixture data missing")
        """
    )
    (pytester.path / "CRASH").touch()
    pytester.runpytest(*NO_ASYNCIO).assert_outcomes(failed=1)
    assert _ran(pytester.path) == {"0", "1", "2", "3"}
    (pytester.path / "CRASH").unlink()
    pytester.runpytest(*NO_ASYNCIO, "--rampart-resume").assert_outcomes(passed=1)
    assert _ran(pytester.path) == {"2"}
