"""Two Ctrl-C in quick succession never leave a report that reads as a clean run.

Real pytest subprocesses and real SIGINTs to the run's process group (what a terminal,
and ``timeout -s INT``, send), in one process and under ``-n 2``, at gaps of 0.01, 0.1
and 0.5 s. The harness waits for a marker (files the in-flight clones write, journal
lines) before the first signal, so the run is in the middle of its clones on any
machine; the gap between the two signals is the only timing, and every outcome the
test accepts is correct whatever the machine does in that gap.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from typing import TYPE_CHECKING

import pytest

from tests.cli._cli import run_main
from tests.pytest_plugin._subprocess import PytestProcess, journal_files, journal_lines
from tests.pytest_plugin.conftest import write_ini

if TYPE_CHECKING:
    from pathlib import Path

CONFTEST = """
import os
from pathlib import Path
import pytest
from rampart.reporting import JsonFileReportSink, JsonlTraceSink

def pytest_rampart_sinks(config):
    out = Path(__file__).parent / "reports"
    return [JsonFileReportSink(output_dir=out), JsonlTraceSink(output_dir=out)]

@pytest.fixture
def anyio_backend():
    return os.environ.get("INNER_BACKEND", "asyncio")
"""

# Clones 0-7 finish at once (clone 1 with an UNSAFE finding); from clone 8 on every
# clone records one result and blocks until the run is interrupted.
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
    status = SafetyStatus.UNSAFE if k == 1 else SafetyStatus.SAFE
    record_result(Result(status=status, summary=f"first {k}"))
    if k < 8:
        return
    (pathlib.Path(__file__).parent / f"in-flight-{k}").touch()
    await anyio.sleep(600)

def test_after():
    record_result(Result(status=SafetyStatus.SAFE, summary="after"))
"""

FINISHED_LINES = 1 + 8


def _reports(directory: Path) -> list[dict[str, object]]:
    out = directory / "reports"
    return [json.loads(p.read_text()) for p in sorted(out.glob("run_report_*.json"))]


@pytest.mark.parametrize(
    ("backend", "workers", "gap"),
    [
        *[("asyncio", workers, gap) for workers in (0, 2) for gap in (0.01, 0.1, 0.5)],
        ("trio", 0, 0.01),
        ("trio", 0, 0.5),
    ],
)
def test_two_quick_interrupts_never_write_a_clean_report(
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    backend: str,
    workers: int,
    gap: float,
) -> None:
    """No report, or one that says interrupted and incomplete with a non-zero status;
    the run never exits 0, and ``rampart report`` of what was written never shows the
    group (whose clone 1 recorded UNSAFE) as passed."""
    write_ini(pytester)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(SUITE)
    args = ("-n", str(workers)) if workers else ()
    run = PytestProcess(pytester.path, *args, env={"INNER_BACKEND": backend})
    directory = pytester.path
    run.wait_until(
        lambda: (
            any(directory.glob("in-flight-*")) and len(journal_lines(directory)) >= FINISHED_LINES
        ),
        "clones in flight and the finished ones journaled",
    )
    run.interrupt()
    time.sleep(gap)
    run.interrupt()
    status, output = run.finish()
    assert status in (pytest.ExitCode.INTERRUPTED, 130), output
    for report in _reports(directory):
        run_section = report["run"]
        assert isinstance(run_section, dict)
        assert run_section["interrupted"] is True, output
        assert run_section["incomplete"] is True, output
        assert run_section["exit_status"] not in (0, None), output
        assert report["metadata"]["interrupted"] is True  # type: ignore[index]
    _never_shown_passed(directory, capsys)
    assert "Traceback" not in _without_lost_signals(output), output


# Python's own report of a SIGINT that landed inside a garbage-collection callback (a
# weakref's), which cannot raise: "Exception ignored in: <function ...>" ending in
# KeyboardInterrupt, printed by pytest as an unraisable-exception warning. The second
# Ctrl-C is then lost and the run ends as the first one decided; what these tests check
# is that nothing *rampart* raises reaches the user.
_UNRAISABLE = re.compile(
    r"PytestUnraisableExceptionWarning: Exception ignored in: .*?"
    r"warnings\.warn\(pytest\.PytestUnraisableExceptionWarning\(msg\)\)",
    re.DOTALL,
)


# The same lost signal once pytest has finished (its unraisable hook is gone), while the
# interpreter exits and collects garbage: Python prints it itself. A frame line is
# indented or blank, so the match cannot reach past the one KeyboardInterrupt report.
_LOST_AT_EXIT = re.compile(
    r"Exception ignored in: [^\n]*\nTraceback \(most recent call last\):\n"
    r"(?:[ \t][^\n]*\n|\n)*?KeyboardInterrupt:[^\n]*(?:\n|$)"
)


def _without_lost_signals(output: str) -> str:
    def lost_signal(found: re.Match[str]) -> str:
        report = found.group(0).split("\nEnable tracemalloc", 1)[0].rstrip()
        return "" if report.endswith("\nKeyboardInterrupt") else found.group(0)

    return _LOST_AT_EXIT.sub("", _UNRAISABLE.sub(lost_signal, output))


def _never_shown_passed(directory: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every report and trace the run wrote, and its journal, read back by ``rampart
    report``: the interrupted group (clone 1 recorded UNSAFE) is never PASS, and a
    report or trace shows the run's interrupted mark."""
    reports = directory / "reports"
    saved = [*reports.glob("run_report_*.json")]
    saved += [path for path in reports.glob("traces_*.jsonl") if path.stat().st_size]
    (journal,) = journal_files(directory)
    for path in [*saved, journal]:
        outcome = run_main(capsys, "report", path, "--summary", "groups")
        assert outcome.status == 0, outcome.err
        assert "test_group" in outcome.out, outcome.out
        assert "PASS  test_group" not in outcome.out, outcome.out
        if path in saved:
            assert f"WARNING: {path} is an interrupted run" in outcome.out, outcome.out


def test_interrupt_of_the_controller_alone_under_xdist(pytester: pytest.Pytester) -> None:
    """SIGINT to the xdist controller's pid only (``os.kill``), twice: never a clean
    report either."""
    write_ini(pytester)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(SUITE)
    run = PytestProcess(pytester.path, "-n", "2")
    directory = pytester.path
    run.wait_until(
        lambda: (
            any(directory.glob("in-flight-*")) and len(journal_lines(directory)) >= FINISHED_LINES
        ),
        "clones in flight and the finished ones journaled",
    )
    os.kill(run.process.pid, signal.SIGINT)
    time.sleep(0.1)
    os.kill(run.process.pid, signal.SIGINT)
    status, output = run.finish()
    run.kill()  # workers left behind, if any
    assert status in (pytest.ExitCode.INTERRUPTED, 130), output
    for report in _reports(directory):
        assert report["run"]["interrupted"] is True, output  # type: ignore[index]
        assert report["run"]["incomplete"] is True, output  # type: ignore[index]


def test_a_second_interrupt_inside_pytests_own_handling(pytester: pytest.Pytester) -> None:
    """The second Ctrl-C lands while pytest handles the first (its handler is slow: it
    formats the traceback), which leaves pytest's exit status at 0. Deterministic
    stand-in: a ``pytest_keyboard_interrupt`` hook that raises KeyboardInterrupt. The
    report still says interrupted and incomplete, never a clean run."""
    write_ini(pytester)
    pytester.makeconftest(
        CONFTEST
        + """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_keyboard_interrupt(excinfo):
    raise KeyboardInterrupt  # the second Ctrl-C
"""
    )
    pytester.makepyfile(
        """
        from rampart import Result, SafetyStatus, record_result

        def test_one():
            record_result(Result(status=SafetyStatus.UNSAFE, summary="finding"))

        def test_two():
            record_result(Result(status=SafetyStatus.SAFE, summary="two"))
            raise KeyboardInterrupt

        def test_three():
            record_result(Result(status=SafetyStatus.SAFE, summary="three"))
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:asyncio", "-p", "no:cacheprovider")
    assert result.ret != 0
    found = _reports(pytester.path)
    assert found, result.stdout.str()
    for report in found:
        assert report["run"]["interrupted"] is True  # type: ignore[index]
        assert report["run"]["incomplete"] is True  # type: ignore[index]
        assert report["run"]["exit_status"] == pytest.ExitCode.INTERRUPTED  # type: ignore[index]
