"""``--rampart-resume`` never erases a finding: an UNSAFE result in the journal is kept.

A clone (or a plain test) records UNSAFE and is still running when a real SIGINT stops
the run, so the journal holds its UNSAFE result in a ``partial`` unit. The resumed run
would record SAFE for it; the UNSAFE finding must stand, in one process and under
``-n 2``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from tests.pytest_plugin._subprocess import PytestProcess, journal_keys
from tests.pytest_plugin.conftest import NO_ASYNCIO, REPORT_HOOK, all_results, reports, write_ini

if TYPE_CHECKING:
    from pathlib import Path

# In the first run clone 3 and test_plain record UNSAFE, then block until the
# interrupt; in a resumed run (RERUN exists) they would record SAFE and return.
SUITE = """
import pathlib
import anyio
import pytest
from rampart import Result, SafetyStatus, record_result

HERE = pathlib.Path(__file__).parent

def rerun():
    return (HERE / "RERUN").exists()

@pytest.mark.trial(n=10, concurrency=10)
async def test_group(rampart_trial):
    k = rampart_trial.index
    if k == 3 and not rerun():
        record_result(Result(status=SafetyStatus.UNSAFE, summary="clone 3 leaked"))
        (HERE / "unsafe-group").touch()
        await anyio.sleep(600)
    record_result(Result(status=SafetyStatus.SAFE, summary=f"clone {k}"))

async def test_plain():
    if not rerun():
        record_result(Result(status=SafetyStatus.UNSAFE, summary="plain leaked"))
        (HERE / "unsafe-plain").touch()
        await anyio.sleep(600)
    record_result(Result(status=SafetyStatus.SAFE, summary="plain ok"))
"""


def _partial_unsafe_journaled(directory: Path, test: str) -> bool:
    return any(
        key["outcome"] == "partial" and test in key["nodeid"] for key in journal_keys(directory)
    )


def _stop_with_a_finding_in_flight(directory: Path, test: str, *args: str) -> None:
    run = PytestProcess(directory, *args)
    run.wait_until(lambda: (directory / f"unsafe-{test}").exists(), "the UNSAFE result")
    run.interrupt()
    status, output = run.finish()
    assert status == pytest.ExitCode.INTERRUPTED, output
    assert _partial_unsafe_journaled(directory, test), output


def _unsafe_summaries(report: dict[str, Any]) -> list[str]:
    return [r["summary"] for r in all_results(report) if r["status"] == "unsafe"]


@pytest.mark.parametrize("workers", [0, 2], ids=["one-process", "n2"])
def test_an_in_flight_unsafe_clone_keeps_its_finding(
    pytester: pytest.Pytester, workers: int
) -> None:
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(SUITE)
    args = ("-n", str(workers)) if workers else ()
    _stop_with_a_finding_in_flight(pytester.path, "group", *args, "-k", "test_group")
    (pytester.path / "RERUN").touch()
    resumed = pytester.runpytest_subprocess(
        *NO_ASYNCIO, *args, "-k", "test_group", "--rampart-resume"
    )
    output = resumed.stdout.str()
    assert resumed.ret == pytest.ExitCode.TESTS_FAILED, output
    final = reports(pytester)[-1]
    assert _unsafe_summaries(final) == ["clone 3 leaked"], output
    (group,) = final["trial_groups"]
    assert group["verdict"] == "failed", json.dumps(group)
    assert group["counts"]["unsafe"] == 1, json.dumps(group)
    assert "1 UNSAFE" in output


@pytest.mark.parametrize("workers", [0, 2], ids=["one-process", "n2"])
def test_an_in_flight_unsafe_plain_test_keeps_its_finding(
    pytester: pytest.Pytester, workers: int
) -> None:
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(SUITE)
    args = ("-n", str(workers)) if workers else ()
    _stop_with_a_finding_in_flight(pytester.path, "plain", *args, "-k", "test_plain")
    (pytester.path / "RERUN").touch()
    resumed = pytester.runpytest_subprocess(
        *NO_ASYNCIO, *args, "-k", "test_plain", "--rampart-resume"
    )
    output = resumed.stdout.str()
    assert resumed.ret == pytest.ExitCode.TESTS_FAILED, output
    assert "UNSAFE" in output
    final = reports(pytester)[-1]
    assert _unsafe_summaries(final) == ["plain leaked"], output


FIXTURE_CONFTEST = (
    REPORT_HOOK
    + """
import pytest

@pytest.fixture
def agent():
    return "hardened"

@pytest.fixture
def target(agent):
    return agent
"""
)

FIXTURE_SUITE = """
import pathlib
import pytest
from rampart import Result, SafetyStatus, record_result

HERE = pathlib.Path(__file__).parent

def test_agent(target):
    (HERE / "ran-agent").touch()
    status = SafetyStatus.SAFE if target == "hardened" else SafetyStatus.UNSAFE
    record_result(Result(status=status, summary=f"agent is {target}"))

def test_untouched():
    (HERE / "ran-untouched").touch()
    record_result(Result(status=SafetyStatus.SAFE, summary="untouched"))

def test_z_stop():
    if (HERE / "STOP").exists():
        raise KeyboardInterrupt
"""


def test_changed_fixture_code_invalidates_resumed_results(pytester: pytest.Pytester) -> None:
    """The agent fixture goes from hardened to vulnerable between the stopped run and
    the resume: the test that uses it (through another fixture) runs again and
    finds the leak; a test that does not use it is still reused."""
    write_ini(pytester)
    pytester.makeconftest(FIXTURE_CONFTEST)
    pytester.makepyfile(FIXTURE_SUITE)
    (pytester.path / "STOP").touch()
    stopped = pytester.runpytest_subprocess(*NO_ASYNCIO)
    assert stopped.ret == pytest.ExitCode.INTERRUPTED, stopped.stdout.str()
    for marker in pytester.path.glob("ran-*"):
        marker.unlink()
    (pytester.path / "STOP").unlink()
    pytester.makeconftest(FIXTURE_CONFTEST.replace('"hardened"', '"vulnerable"', 1))
    resumed = pytester.runpytest_subprocess(*NO_ASYNCIO, "--rampart-resume")
    output = resumed.stdout.str()
    assert (pytester.path / "ran-agent").exists(), output
    assert not (pytester.path / "ran-untouched").exists(), output
    resumed.stdout.fnmatch_lines(["*rampart resume: *::test_agent changed since run *"])
    assert _unsafe_summaries(reports(pytester)[-1]) == ["agent is vulnerable"], output
