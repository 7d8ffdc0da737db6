"""A verdict that ``rampart report``/``diff`` rebuild from a saved run is the one pytest
gave, or says it cannot be given (issue 21 section 1): real pytest runs write the
trace, the report and the journal; the command line reads them back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest

from tests.cli._cli import run_main

if TYPE_CHECKING:
    from pathlib import Path


_PLAIN = ("-p", "no:asyncio", "-p", "no:cacheprovider", "--rampart-report-dir=out")


def _saved(pytester: pytest.Pytester) -> tuple[Path, Path]:
    (trace,) = (pytester.path / "out").glob("traces_*.jsonl")
    (report,) = (pytester.path / "out").glob("run_report_*.json")
    return trace, report


def _group(capsys: pytest.CaptureFixture[str], path: Path, tmp: Path) -> dict[str, object]:
    """The trial group ``rampart report PATH --json`` rebuilds (one group)."""
    out = tmp / f"rebuilt-{path.stem}.json"
    outcome = run_main(capsys, "report", path, "--json", out, "-q")
    assert outcome.status == 0, outcome.err
    (group,) = json.loads(out.read_text(encoding="utf-8"))["trial_groups"]
    assert isinstance(group, dict)
    return group


def _pytest_group(report: Path) -> dict[str, object]:
    (group,) = json.loads(report.read_text(encoding="utf-8"))["trial_groups"]
    assert isinstance(group, dict)
    return group


def _same_verdict(rebuilt: dict[str, object], stated: dict[str, object]) -> None:
    for key in ("verdict", "counts", "executed", "population_status", "reason"):
        assert rebuilt[key] == stated[key], key


def _trace_only(trace: Path, pytester: pytest.Pytester) -> Path:
    """The trace, alone in a new place (so nothing but its records is read)."""
    copy = pytester.path / "alone.jsonl"
    copy.write_bytes(trace.read_bytes())
    return copy


def test_clones_whose_own_assert_failed_are_not_safe(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Clones 0-1 recorded SAFE and then failed their own ``assert``: FAIL 2/4 in
    pytest and in the rebuild (it said PASS 4/4)."""
    pytester.makepyfile(
        """
        import pytest
        from rampart import Result, SafetyStatus, record_result

        @pytest.mark.trial(n=4)
        def test_group(rampart_trial):
            record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
            assert rampart_trial.index > 1, "the agent's answer was wrong"
        """
    )
    pytester.runpytest(*_PLAIN).assert_outcomes(failed=1)
    trace, report = _saved(pytester)
    stated = _pytest_group(report)
    assert stated["verdict"] == "failed"
    assert stated["counts"] == {
        "safe": 2,
        "unsafe": 0,
        "undetermined": 2,
        "error": 0,
        "no_result": 0,
    }
    rebuilt = _group(capsys, _trace_only(trace, pytester), tmp_path)
    _same_verdict(rebuilt, stated)


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["single", "xdist"])
def test_clones_that_recorded_nothing_count_against_the_group(
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    xdist: tuple[str, ...],
) -> None:
    """6 of 10 clones recorded no result: FAIL 4/10 (the rebuild said PASS 4/4); under
    ``-n 2`` the group's facts cross from the worker."""
    pytester.makepyfile(
        """
        import pytest
        from rampart import Result, SafetyStatus, record_result

        @pytest.mark.trial(n=10)
        def test_group(rampart_trial):
            if rampart_trial.index < 4:
                record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
        """
    )
    pytester.runpytest(*_PLAIN, *xdist).assert_outcomes(failed=1)
    trace, report = _saved(pytester)
    stated = _pytest_group(report)
    assert (stated["verdict"], stated["executed"]) == ("failed", 10)
    rebuilt = _group(capsys, _trace_only(trace, pytester), tmp_path)
    _same_verdict(rebuilt, stated)
    assert rebuilt["counts"]["no_result"] == 6  # type: ignore[index]


def test_a_confidence_group_stays_inconclusive(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``confidence=0.95``, 29/30 SAFE and 1 ERROR: INCONCLUSIVE, not a count-rule PASS."""
    pytester.makeini("[pytest]\nrampart_inconclusive = xfail")
    pytester.makepyfile(
        """
        import pytest
        from rampart import Result, SafetyStatus, record_result

        @pytest.mark.trial(n=30, threshold=0.9, confidence=0.95)
        def test_group(rampart_trial):
            status = SafetyStatus.ERROR if rampart_trial.index == 7 else SafetyStatus.SAFE
            record_result(Result(status=status, summary="ok"))
        """
    )
    pytester.runpytest(*_PLAIN).assert_outcomes(xfailed=1)
    trace, report = _saved(pytester)
    stated = _pytest_group(report)
    assert stated["verdict"] == "inconclusive"
    rebuilt = _group(capsys, _trace_only(trace, pytester), tmp_path)
    _same_verdict(rebuilt, stated)
    assert rebuilt["confidence"] == 0.95


def test_max_unsafe_tolerates_what_it_says(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``max_unsafe=3`` with 3 UNSAFE of 10 and threshold 0.7: PASS (the rebuild said FAIL)."""
    pytester.makepyfile(
        """
        import pytest
        from rampart import Result, SafetyStatus, record_result

        @pytest.mark.trial(n=10, threshold=0.7, max_unsafe=3)
        def test_group(rampart_trial):
            status = SafetyStatus.UNSAFE if rampart_trial.index < 3 else SafetyStatus.SAFE
            record_result(Result(status=status, summary="ok"))
        """
    )
    pytester.runpytest(*_PLAIN).assert_outcomes(passed=1)
    trace, report = _saved(pytester)
    stated = _pytest_group(report)
    assert stated["verdict"] == "passed"
    rebuilt = _group(capsys, _trace_only(trace, pytester), tmp_path)
    _same_verdict(rebuilt, stated)
    assert rebuilt["max_unsafe"] == 3


_FIFTY = """
import pytest
from rampart import Result, SafetyStatus, record_result

@pytest.mark.trial(n=50, threshold=0.5)
def test_group(rampart_trial):
    status = SafetyStatus.UNSAFE if rampart_trial.index % 3 == 0 else SafetyStatus.SAFE
    record_result(Result(status=status, summary=f"clone {rampart_trial.index}"))
"""


def test_deleted_unsafe_records_make_the_group_incomplete(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """17 UNSAFE clone records deleted from a 50-clone group: INCOMPLETE (it said
    PASS), and ``diff`` calls nothing an improvement (it said p = 5e-5) and exits 1."""
    pytester.makepyfile(_FIFTY)
    pytester.runpytest(*_PLAIN).assert_outcomes(failed=1)
    trace, report = _saved(pytester)
    stated = _pytest_group(report)
    assert stated["counts"]["unsafe"] == 17  # type: ignore[index]
    lines = trace.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if '"status":"unsafe"' not in line]
    assert len(lines) - len(kept) == 17
    tampered = pytester.path / "tampered.jsonl"
    tampered.write_text("\n".join(kept) + "\n", encoding="utf-8")
    rebuilt = _group(capsys, tampered, tmp_path)
    assert rebuilt["verdict"] == "incomplete"
    assert "17 of the 50 clones the verdict counted have no record" in str(rebuilt["reason"])
    summary = run_main(capsys, "report", tampered, "--summary", "groups")
    assert "PASS" not in summary.out
    assert "INCOMPLETE" in summary.out
    diff = run_main(capsys, "diff", trace, tampered, "--json")
    assert diff.status == 1
    comparison = json.loads(diff.out)
    (group,) = comparison["groups"]
    assert group["change"] == "incomplete (new run does not decide it)"
    assert group["significant"] is False
    assert comparison["incomplete"] == 1


def test_validate_fails_a_report_whose_groups_contradict_its_clones(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(_FIFTY)
    pytester.runpytest(*_PLAIN).assert_outcomes(failed=1)
    _trace, report = _saved(pytester)
    assert run_main(capsys, "validate", report).status == 0
    document = json.loads(report.read_text(encoding="utf-8"))
    group = document["trial_groups"][0]
    group.update(verdict="passed", population_status="safe", reason=None)
    forged = pytester.path / "forged.json"
    forged.write_text(json.dumps(document), encoding="utf-8")
    outcome = run_main(capsys, "validate", forged)
    assert outcome.status == 1
    assert "$.trial_groups[0]: states passed but its clone results give failed" in outcome.out
    rebuilt = run_main(capsys, "report", forged, "--summary", "groups")
    assert "INCOMPLETE" in rebuilt.out
    assert "PASS " not in rebuilt.out


def _wait_for(predicate: object, *, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_journal_left_by_kill_9_is_incomplete(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """kill -9 with 2 of 40 clones done and UNSAFE clones still in flight: the journal
    rebuilds as INCOMPLETE (it said PASS 2/2)."""
    pytester.makepyfile(
        """
        import anyio
        import pytest
        from rampart import Result, SafetyStatus, record_result

        @pytest.mark.trial(n=40, concurrency=40)
        async def test_group(rampart_trial):
            if rampart_trial.index < 2:
                record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
                return
            record_result(Result(status=SafetyStatus.UNSAFE, summary="leaked"))
            await anyio.sleep(3600)
        """
    )
    journal_dir = pytester.path / "out" / "journal"
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", *_PLAIN, "-q"],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def two_lines() -> bool:
            found = list(journal_dir.glob("rampart-journal-*.jsonl"))
            return bool(found) and found[0].read_bytes().count(b"\n") >= 2

        _wait_for(two_lines, what="two journaled clones")
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    (journal,) = journal_dir.glob("rampart-journal-*.jsonl")
    rebuilt = _group(capsys, journal, tmp_path)
    assert rebuilt["verdict"] == "incomplete"
    assert rebuilt["population_status"] != "safe"
    assert "2 of 40 clones are recorded" in str(rebuilt["reason"])


def test_a_crashed_xdist_worker_leaves_an_incomplete_group(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A worker that crashes mid-group under ``-n 2``: the item FAILED and the run is
    incomplete; the trace's 9 clones rebuild as INCOMPLETE (it said PASS 9/9)."""
    pytester.makepyfile(
        """
        import os
        import pytest
        from rampart import Result, SafetyStatus, record_result

        @pytest.mark.trial(n=20)
        def test_group(rampart_trial):
            if rampart_trial.index == 9:
                os._exit(1)
            record_result(Result(status=SafetyStatus.SAFE, summary="ok"))

        def test_other():
            record_result(Result(status=SafetyStatus.SAFE, summary="fine"))
        """
    )
    run = pytester.runpytest_subprocess(*_PLAIN, "-n", "2", timeout=300)
    assert run.ret != 0
    trace, report = _saved(pytester)
    assert json.loads(report.read_text(encoding="utf-8"))["run"]["incomplete"] is True
    records = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    clones = [r for r in records if r["result"]["population"] is not None]
    assert len(clones) == 9
    alone = _trace_only(trace, pytester)
    rebuilt = _group(capsys, alone, tmp_path)
    assert rebuilt["verdict"] == "incomplete"
    assert "9 of 20 clones are recorded" in str(rebuilt["reason"])
    # The trace alone carries the run's incomplete mark.
    summary = run_main(capsys, "report", alone, "--summary", "groups")
    assert summary.lines[1].startswith(f"WARNING: {alone} is an incomplete run: ")
    assert "crashed" in summary.lines[1]
