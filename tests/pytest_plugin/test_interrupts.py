"""Ctrl-C ends a run cleanly: results kept, reports marked, exit 2; a second one at once.

Real pytest subprocesses and real SIGINTs (to the run's process group, as a terminal
sends Ctrl-C), on asyncio and trio, with and without xdist. The harness waits for a
marker (a file, journal lines) before each signal; nothing is timed.
"""

from __future__ import annotations

import pytest

from rampart.codec import deserialize_record
from tests.pytest_plugin._subprocess import (
    PytestProcess,
    journal_files,
    journal_keys,
    journal_lines,
)
from tests.pytest_plugin.conftest import (
    NO_ASYNCIO,
    REPORT_HOOK,
    all_results,
    only_report,
    write_ini,
)

BACKEND_CONFTEST = (
    REPORT_HOOK
    + """
import os
import pytest

@pytest.fixture
def anyio_backend():
    return os.environ["INNER_BACKEND"]
"""
)

# Clones 0-7 finish at once; from clone 8 on every clone records one result, then
# blocks until the run is interrupted. test_after must never run.
SUITE = """
import pathlib
import anyio
import pytest
from rampart import Result, SafetyStatus, record_result

def test_before():
    record_result(Result(status=SafetyStatus.SAFE, summary="before"))

@pytest.mark.trial(n=40, concurrency=4)
async def test_group(rampart_trial):
    k = rampart_trial.index
    record_result(Result(status=SafetyStatus.SAFE, summary=f"first {k}"))
    if k < 8:
        record_result(Result(status=SafetyStatus.SAFE, summary=f"done {k}"))
        return
    (pathlib.Path(__file__).parent / f"in-flight-{k}").touch()
    await anyio.sleep(600)

def test_after():
    record_result(Result(status=SafetyStatus.SAFE, summary="after"))
"""

# test_before (1 line) and clones 0-7 (2 lines each) are journaled before the stop.
FINISHED_LINES = 1 + 8 * 2


def _finished_before_interrupt(run: PytestProcess) -> None:
    directory = run.directory
    run.wait_until(
        lambda: (
            any(directory.glob("in-flight-*")) and len(journal_lines(directory)) >= FINISHED_LINES
        ),
        "clones in flight and the finished ones journaled",
    )


def _summaries(report: dict[str, object]) -> list[str]:
    return sorted(result["summary"] for result in all_results(report))  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ctrl_c_during_a_trial_group(pytester: pytest.Pytester, backend: str) -> None:
    """Exit 2, never a test failure; finished clones and what in-flight clones recorded
    are in the report, which says interrupted; test_after never runs."""
    write_ini(pytester)
    pytester.makeconftest(BACKEND_CONFTEST)
    pytester.makepyfile(SUITE)
    run = PytestProcess(pytester.path, env={"INNER_BACKEND": backend})
    _finished_before_interrupt(run)
    run.interrupt()
    status, output = run.finish()
    assert status == pytest.ExitCode.INTERRUPTED, output
    assert "RAMPART: INTERRUPTED" in output
    assert "FAILED" not in output
    assert "failed" not in output
    report = only_report(pytester)
    assert report["metadata"]["interrupted"] is True
    summaries = _summaries(report)
    assert "after" not in summaries
    for k in range(8):
        assert f"first {k}" in summaries
        assert f"done {k}" in summaries
    in_flight = sorted(int(p.name.rsplit("-", 1)[1]) for p in pytester.path.glob("in-flight-*"))
    assert in_flight, output
    for k in in_flight:
        assert f"first {k}" in summaries  # recorded before the interrupt: kept
    # Every journal line decodes; the in-flight clones are marked partial.
    for line in journal_lines(pytester.path):
        deserialize_record(data=line.decode())
    outcomes = {(key["clone"], key["outcome"]) for key in journal_keys(pytester.path)}
    assert {(k, "passed") for k in range(8)} <= outcomes
    assert {(k, "partial") for k in in_flight} <= outcomes


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_keyboard_interrupt_raised_in_a_clone_stops_the_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """``raise KeyboardInterrupt`` in one clone's own code: the session stops with exit 2
    (not a test failure, not "carry on")."""
    write_ini(pytester)
    pytester.makeconftest(BACKEND_CONFTEST)
    pytester.makepyfile(
        """
        import anyio
        import pytest
        from rampart import Result, SafetyStatus, record_result

        @pytest.mark.trial(n=6, concurrency=6)
        async def test_group(rampart_trial):
            record_result(Result(status=SafetyStatus.SAFE, summary=f"c{rampart_trial.index}"))
            if rampart_trial.index == 3:
                raise KeyboardInterrupt
            await anyio.sleep(30)

        def test_after():
            record_result(Result(status=SafetyStatus.SAFE, summary="after"))
        """
    )
    monkeypatch.setenv("INNER_BACKEND", backend)
    result = pytester.runpytest_subprocess(*NO_ASYNCIO)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.fnmatch_lines(["*RAMPART: INTERRUPTED*"])
    result.stdout.no_fnmatch_line("*FAILED*")
    report = only_report(pytester)
    assert report["metadata"]["interrupted"] is True
    summaries = _summaries(report)
    assert "after" not in summaries
    assert "c3" in summaries


def test_keyboard_interrupt_in_a_sink_stops_the_session(pytester: pytest.Pytester) -> None:
    """A sink raising KeyboardInterrupt ends the run as interrupted (exit 2), never an
    internal error; the terminal says so."""
    write_ini(pytester)
    pytester.makeconftest(
        """
        from rampart.reporting import ReportSink

        class Interrupting:
            async def emit_async(self, *, report):
                raise KeyboardInterrupt

        def pytest_rampart_sinks(config):
            return [Interrupting()]
        """
    )
    pytester.makepyfile(
        """
        from rampart import Result, SafetyStatus, record_result

        def test_one():
            record_result(Result(status=SafetyStatus.SAFE, summary="one"))
        """
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.fnmatch_lines(["*RAMPART: INTERRUPTED*"])
    result.stdout.no_fnmatch_line("*INTERNALERROR*")


def test_second_ctrl_c_exits_at_once_leaving_the_journal_valid(
    pytester: pytest.Pytester,
) -> None:
    """After the first Ctrl-C, a second one during cleanup (here a teardown that would
    take ten minutes) exits at once with 130; every journal line still decodes."""
    write_ini(pytester)
    pytester.makeconftest(
        REPORT_HOOK
        + """
import pathlib
import time
import pytest

@pytest.fixture(scope="session")
def slow_cleanup():
    yield
    (pathlib.Path(__file__).parent / "cleanup-started").touch()
    time.sleep(600)
"""
    )
    pytester.makepyfile(
        SUITE.replace("test_group(rampart_trial)", "test_group(rampart_trial, slow_cleanup)")
    )
    run = PytestProcess(pytester.path)
    _finished_before_interrupt(run)
    run.interrupt()
    run.wait_until(lambda: (pytester.path / "cleanup-started").exists(), "cleanup started")
    run.interrupt()
    status, output = run.finish()
    assert status == 130, output
    assert "second interrupt, exiting at once" in output
    lines = journal_lines(pytester.path)
    assert len(lines) >= FINISHED_LINES
    for line in lines:
        deserialize_record(data=line.decode())
    assert not (pytester.path / "reports").exists() or not list(
        (pytester.path / "reports").glob("run_report_*.json")
    )


def test_ctrl_c_under_xdist(pytester: pytest.Pytester) -> None:
    """-n 2: exit 2, the report says interrupted and holds the clones that finished on
    the worker (read back from the journal when the worker's report never came)."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(SUITE)
    run = PytestProcess(pytester.path, "-n", "2")
    _finished_before_interrupt(run)
    run.interrupt()
    status, output = run.finish()
    assert status == pytest.ExitCode.INTERRUPTED, output
    assert "RAMPART: INTERRUPTED" in output
    # The workers wrote the journal; the controller still says how to resume.
    (journal,) = journal_files(pytester.path)
    assert f"Resume it: pytest ... --rampart-resume={journal}" in output
    report = only_report(pytester)
    assert report["metadata"]["interrupted"] is True
    summaries = _summaries(report)
    for k in range(8):
        assert f"first {k}" in summaries
        assert f"done {k}" in summaries
    for line in journal_lines(pytester.path):
        deserialize_record(data=line.decode())


def test_injections_are_removed_when_interrupted(pytester: pytest.Pytester) -> None:
    """Clones interrupted while their agent answers still remove what they planted."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(
        """
        import pathlib
        import pytest
        from rampart import Attacks
        from rampart.evaluators import ToolCalled
        from rampart.testing import SimulatedAgent

        LOG = pathlib.Path(__file__).parent / "injections.log"

        class Handle:
            payload_id = None
            surface_name = "notes"

            def __init__(self, k):
                self.k = k

            async def __aenter__(self):
                with LOG.open("a") as log:
                    log.write(f"planted {self.k}\\n")
                return self

            async def __aexit__(self, *exc):
                with LOG.open("a") as log:
                    log.write(f"removed {self.k}\\n")
                return None

        @pytest.mark.trial(n=3, concurrency=3)
        async def test_xpia(rampart_trial):
            agent = SimulatedAgent(latency=600)
            await Attacks.xpia(
                inject=Handle(rampart_trial.index),
                trigger="Summarise my notes",
                evaluator=ToolCalled("send_email"),
            ).execute_async(adapter=agent)
        """
    )
    log = pytester.path / "injections.log"
    run = PytestProcess(pytester.path)
    run.wait_until(
        lambda: log.exists() and log.read_text().count("planted") == 3, "three injections planted"
    )
    run.interrupt()
    status, output = run.finish()
    assert status == pytest.ExitCode.INTERRUPTED, output
    lines = log.read_text().splitlines()
    expected = [f"planted {k}" for k in range(3)] + [f"removed {k}" for k in range(3)]
    assert sorted(lines) == sorted(expected)
