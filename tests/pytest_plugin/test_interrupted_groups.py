"""Ctrl-C in the middle of a trial group: the group says INTERRUPTED with its counts, the
terminal and the files agree, and a SIGINT to the xdist controller stops the workers.

Real pytest subprocesses and real SIGINTs, on asyncio and trio. Clones 0-7 finish; from
clone 8 on each clone records one result, writes its pid to ``in-flight-<k>`` and blocks
(four at a time, so clones 8-11 run and 12-39 never start); when cancelled it writes
``stopped-<k>``. The harness waits for those files and the journal lines before it
signals; nothing is timed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.pytest_plugin._subprocess import GUARD_SECONDS, PytestProcess
from tests.pytest_plugin.conftest import REPORT_HOOK, write_ini

CONFTEST = (
    REPORT_HOOK
    + """
import os
import pathlib
import time
import pytest

@pytest.fixture
def anyio_backend():
    return os.environ["INNER_BACKEND"]

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    # On the xdist controller, before xdist tears its workers down: note whether the
    # clones that were running have stopped by now (a worker the Ctrl-C did not reach
    # carries on until the teardown unless the controller stops it).
    if hasattr(session.config, "workerinput") or not os.environ.get("WAIT_FOR_STOP"):
        return
    here = pathlib.Path(__file__).parent
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        running = {p.name.rsplit("-", 1)[1] for p in here.glob("in-flight-*")}
        stopped = {p.name.rsplit("-", 1)[1] for p in here.glob("stopped-*")}
        if running and running <= stopped:
            (here / "stopped-before-teardown").touch()
            return
        time.sleep(0.05)
"""
)

SUITE = """
import os
import pathlib
import anyio
import pytest
from rampart import Result, SafetyStatus, record_result

HERE = pathlib.Path(__file__).parent

@pytest.mark.trial(n=40, concurrency=4)
async def test_group(rampart_trial):
    k = rampart_trial.index
    record_result(Result(status=SafetyStatus.SAFE, summary=f"first {k}"))
    if k < 8:
        record_result(Result(status=SafetyStatus.SAFE, summary=f"done {k}"))
        return
    (HERE / f"in-flight-{k}").write_text(str(os.getpid()))
    try:
        await anyio.sleep(600)
    finally:
        (HERE / f"stopped-{k}").touch()
"""

# Clones 0-7 finish (two lines each); clones 8-11 are cut short; 12-39 never start.
RAN, CUT_SHORT, NOT_RUN = 8, 4, 28
COUNTS = (
    f"{RAN} of 40 clones ran, {CUT_SHORT} cut short (what they recorded is kept, not "
    f"counted), {NOT_RUN} not run"
)


def _start(pytester: pytest.Pytester, backend: str, *args: str, **env: str) -> PytestProcess:
    write_ini(pytester)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(SUITE)
    return PytestProcess(
        pytester.path,
        "--rampart-progress=plain",
        "--rampart-report-dir=out",
        *args,
        env={"INNER_BACKEND": backend, **env},
    )


def _journal_keys(directory: Path) -> list[dict[str, object]]:
    """The ``_rampart_journal`` keys of every complete line of the run's journal (in the
    report directory's ``journal``)."""
    keys = []
    for path in (directory / "out" / "journal").glob("rampart-journal-*.jsonl"):
        data = path.read_bytes()
        for line in data[: data.rfind(b"\n") + 1].splitlines():
            keys.append(json.loads(line)["result"]["metadata"]["_rampart_journal"])
    return keys


def _in_flight(directory: Path) -> dict[int, int]:
    """Clone index -> the pid of the process running it, for the clones in flight."""
    return {
        int(path.name.rsplit("-", 1)[1]): int(path.read_text())
        for path in directory.glob("in-flight-*")
        if path.read_text()
    }


def _wait_for_the_cut(run: PytestProcess) -> None:
    """Every clone that finishes has been journaled and the four others are running."""
    directory = run.directory
    run.wait_until(
        lambda: (
            len(_in_flight(directory)) == CUT_SHORT and len(_journal_keys(directory)) >= 2 * RAN
        ),
        "clones 8-11 in flight and clones 0-7 journaled",
    )


def _the_report(pytester: pytest.Pytester) -> dict[str, object]:
    (path,) = (pytester.path / "out").glob("run_report_*.json")
    report: dict[str, object] = json.loads(path.read_text())
    return report


def _check_the_group(output: str, report: dict[str, object]) -> None:
    """The group line (terminal) and the report's entry say the same: INTERRUPTED, with
    the counts; never a finished group."""
    (group,) = report["trial_groups"]  # type: ignore[misc]
    assert group["interrupted"] is True
    assert group["verdict"] == "incomplete"
    assert (group["executed"], group["not_run"]) == (RAN, NOT_RUN)
    assert group["reason"] == COUNTS
    assert "test_group [8/8 safe, 100% pass rate" in output
    assert f"-- INTERRUPTED: {COUNTS}" in output
    assert "done in" not in output


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_group_cut_short_shows_interrupted_with_its_counts(
    pytester: pytest.Pytester, backend: str
) -> None:
    """One process: the group's progress line ends INTERRUPTED (never "done in"), the
    summary's group line and the report's entry state its counts, and ``rampart
    validate`` finds the entry consistent with the clone records."""
    run = _start(pytester, backend)
    _wait_for_the_cut(run)
    run.interrupt()
    status, output = run.finish()
    assert status == pytest.ExitCode.INTERRUPTED, output
    assert "rampart test_group: 8/40 | 8 safe, 0 unsafe, 0 undet, 0 error | INTERRUPTED" in output
    _check_the_group(output, _the_report(pytester))
    checked = subprocess.run(
        [sys.executable, "-m", "rampart", "validate", "out"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "all valid" in checked.stdout


def _marks(pytester: pytest.Pytester) -> set[str]:
    """The run marks every trace record carries (``interrupted`` / ``incomplete``)."""
    (trace,) = (pytester.path / "out").glob("traces_*.jsonl")
    found = set()
    for line in trace.read_text().splitlines():
        marks = json.loads(line)["result"]["metadata"]["_rampart_run"]
        found.add(json.dumps({k: marks[k] for k in ("interrupted", "incomplete")}))
    return found


def _check_files_agree(pytester: pytest.Pytester, status: int, output: str) -> None:
    """Exit status, terminal, JSON report, trace and journal say the same of the run."""
    assert status == pytest.ExitCode.INTERRUPTED, output
    assert "RAMPART: INTERRUPTED" in output
    report = _the_report(pytester)
    run_info = report["run"]
    assert run_info["exit_status"] == status  # type: ignore[index]
    assert run_info["interrupted"] is True  # type: ignore[index]
    assert run_info["incomplete"] is True  # type: ignore[index]
    assert report["metadata"]["interrupted"] is True  # type: ignore[index]
    assert report["metadata"]["incomplete"] is True  # type: ignore[index]
    assert _marks(pytester) == {json.dumps({"interrupted": True, "incomplete": True})}
    outcomes = {(key["clone"], key["outcome"]) for key in _journal_keys(pytester.path)}
    assert outcomes == {(k, "passed") for k in range(RAN)} | {
        (k, "partial") for k in range(RAN, RAN + CUT_SHORT)
    }
    _check_the_group(output, report)


def test_under_xdist_the_terminal_and_the_files_agree(pytester: pytest.Pytester) -> None:
    """-n 2, Ctrl-C to the whole run: the terminal (status line, group line), the exit
    status, the JSON report, the trace and the journal agree on interrupted,
    incomplete, the exit status and the group cut short."""
    run = _start(pytester, "asyncio", "-n", "2")
    _wait_for_the_cut(run)
    run.interrupt()
    status, output = run.finish()
    _check_files_agree(pytester, status, output)


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rpartition(")")[2].split()[0] in ("Z", "X")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sigint_to_the_xdist_controller_stops_the_workers(
    pytester: pytest.Pytester, backend: str
) -> None:
    """-n 2, SIGINT to the controller alone: the workers running trials are interrupted
    before xdist tears them down (the clones' own cleanup runs), no worker process is
    left, and the run ends interrupted as at a Ctrl-C, files and terminal agreeing."""
    run = _start(pytester, backend, "-n", "2", WAIT_FOR_STOP="1")
    _wait_for_the_cut(run)
    workers = set(_in_flight(pytester.path).values())
    assert run.process.pid not in workers
    os.kill(run.process.pid, 2)  # SIGINT to the controller only
    status, output = run.finish()
    assert (pytester.path / "stopped-before-teardown").exists(), output
    deadline = time.monotonic() + GUARD_SECONDS
    while not all(_gone(pid) for pid in workers):
        assert time.monotonic() < deadline, f"workers {workers} still running:\n{output}"
        time.sleep(0.05)
    _check_files_agree(pytester, status, output)
