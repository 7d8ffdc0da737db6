"""``--rampart-report-dir`` / ini ``rampart_report_dir``: every report, no conftest code."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from tests.pytest_plugin.conftest import NO_ASYNCIO, REPORT_HOOK, only_report, write_ini

if TYPE_CHECKING:
    from pathlib import Path

SUITE = """
import pytest
from rampart import Result, SafetyStatus, record_result

@pytest.mark.trial(n=3)
def test_group(rampart_trial):
    record_result(Result(status=SafetyStatus.SAFE, summary=f"clone {rampart_trial.index}"))

def test_plain():
    record_result(Result(status=SafetyStatus.UNSAFE, summary="leak"))
"""


def _written(directory: Path) -> dict[str, list[Path]]:
    files = sorted(p for p in directory.iterdir() if not p.name.startswith("."))
    return {
        suffix: [p for p in files if p.suffix == suffix] for suffix in (".json", ".jsonl", ".html")
    }


def test_option_writes_json_jsonl_and_html(pytester: pytest.Pytester) -> None:
    """The three reports appear in DIR, each named in the terminal; the run exits as usual."""
    write_ini(pytester)
    pytester.makepyfile(SUITE)
    result = pytester.runpytest(*NO_ASYNCIO, "--rampart-report-dir", "out/reports")
    result.assert_outcomes(passed=2)
    files = _written(pytester.path / "out" / "reports")
    assert [len(files[s]) for s in (".json", ".jsonl", ".html")] == [1, 1, 1]
    report = json.loads(files[".json"][0].read_text())
    assert report["total_runs"] == 4
    assert [g["verdict"] for g in report["trial_groups"]] == ["passed"]
    assert len(files[".jsonl"][0].read_text().splitlines()) == 4
    html = files[".html"][0].read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert "test_plain" in html
    for path in (*files[".json"], *files[".jsonl"], *files[".html"]):
        result.stdout.fnmatch_lines([f"RAMPART report written to {path}"])


def test_ini_option_is_relative_to_the_rootdir(pytester: pytest.Pytester) -> None:
    write_ini(pytester, "rampart_report_dir = build/rampart")
    pytester.makepyfile(SUITE)
    result = pytester.runpytest(*NO_ASYNCIO)
    result.assert_outcomes(passed=2)
    files = _written(pytester.path / "build" / "rampart")
    assert [len(files[s]) for s in (".json", ".jsonl", ".html")] == [1, 1, 1]


def test_hook_sinks_still_run_alongside(pytester: pytest.Pytester) -> None:
    """The option adds to the hook's sinks; it does not replace them."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(SUITE)
    pytester.runpytest(*NO_ASYNCIO, "--rampart-report-dir=extra").assert_outcomes(passed=2)
    assert only_report(pytester)["total_runs"] == 4  # the hook's sink, in reports/
    assert len(_written(pytester.path / "extra")[".html"]) == 1


def test_a_file_in_the_way_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """A path that cannot be a directory stops the run before any test, naming the option."""
    write_ini(pytester)
    pytester.makepyfile("def test_ok():\n    pass\n")
    (pytester.path / "taken").write_text("a file, not a directory")
    result = pytester.runpytest(*NO_ASYNCIO, "--rampart-report-dir=taken")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rampart-report-dir*taken*(an existing file)*"])


def test_unwritable_directory_fails_the_run_loudly(pytester: pytest.Pytester) -> None:
    """A report that cannot be written is a sink failure: named, and the exit is non-zero."""
    write_ini(pytester)
    pytester.makeconftest(
        """
        import shutil

        def pytest_sessionfinish(session):
            # The directory disappears under a file of the same name before the reports.
            shutil.rmtree("out", ignore_errors=True)
            open("out", "w").close()
        """
    )
    pytester.makepyfile(
        """
        from rampart import Result, SafetyStatus, record_result

        def test_ok():
            record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
        """
    )
    result = pytester.runpytest(*NO_ASYNCIO, "--rampart-report-dir=out")
    result.assert_outcomes(passed=1)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*RAMPART: REPORT SINK FAILED*", "*HtmlReportSink*"])


def test_blank_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    write_ini(pytester)
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*NO_ASYNCIO, "--rampart-report-dir= ")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--rampart-report-dir must be a directory path*"])
