"""A journal is input: hostile lines are errors that name the line, never a crash.

The resumed journal may have been edited, truncated or planted. A line nested 100,000
deep, a unit claiming ``of = 10**10`` results and escape sequences in ``detail`` must
each be reported with its line number (and what was wrong) and not used -- never a
RecursionError, a MemoryError, an INTERNALERROR, or raw escape sequences on the
terminal. Also: ``--rampart-resume`` given a JSONL trace is a usage error.
"""

from __future__ import annotations

import json

import pytest

from tests.pytest_plugin._subprocess import journal_files
from tests.pytest_plugin.conftest import NO_ASYNCIO, REPORT_HOOK, write_ini

SUITE = """
from rampart import Result, SafetyStatus, record_result

def test_fail():
    record_result(Result(status=SafetyStatus.UNSAFE, summary="leaked"))
    assert False, "the agent leaked"

def test_pass():
    record_result(Result(status=SafetyStatus.SAFE, summary="held"))
"""

ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x9b31m"


def _line_of(lines: list[str], test: str) -> dict[str, object]:
    return next(json.loads(line) for line in lines if f"::{test}" in line)


def test_hostile_journal_lines_are_named_and_not_used(pytester: pytest.Pytester) -> None:
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(SUITE)
    pytester.runpytest_subprocess(*NO_ASYNCIO).assert_outcomes(passed=1, failed=1)
    (journal,) = journal_files(pytester.path)
    lines = journal.read_text().splitlines()
    failing = _line_of(lines, "test_fail")
    failing["result"]["metadata"]["_rampart_journal"]["detail"] = ESCAPES  # type: ignore[index]
    passing = _line_of(lines, "test_pass")
    passing["result"]["metadata"]["_rampart_journal"]["of"] = 10**10  # type: ignore[index]
    nested = '{"result":' + "[" * 100_000 + "]" * 100_000 + "}"
    hostile = [json.dumps(failing), nested, json.dumps(passing)]
    journal.write_text("\n".join(hostile) + "\n")

    result = pytester.runpytest_subprocess(*NO_ASYNCIO, f"--rampart-resume={journal}")
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    assert "RecursionError" not in output
    assert "MemoryError" not in output
    assert "\x1b" not in output
    assert "\x9b" not in output
    # Nothing was reusable: both tests ran again.
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*rampart resume: *line 1: _rampart_journal.detail holds control characters*",
            "*rampart resume: *line 2: $: JSON nesting is too deep*",
            "*rampart resume: *line 3: _rampart_journal.of is out of range*",
        ]
    )


def test_resume_from_a_trace_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """A JSONL trace (not a journal) given to --rampart-resume: a usage error naming the
    option; nothing runs and the trace is left as it was."""
    write_ini(pytester)
    pytester.makepyfile(SUITE)
    pytester.runpytest_subprocess(*NO_ASYNCIO, "--rampart-report-dir=out")
    (trace,) = (pytester.path / "out").glob("traces_*.jsonl")
    before = trace.read_bytes()
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, f"--rampart-resume={trace}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(["*--rampart-resume*not a run journal*"])
    assert trace.read_bytes() == before


def test_resume_says_where_a_report_dir_run_kept_its_journal(pytester: pytest.Pytester) -> None:
    """A run with --rampart-report-dir keeps its journal there; --rampart-resume alone
    does not look there, and its error names the directory and the option to give."""
    write_ini(pytester)
    pytester.makepyfile(SUITE)
    pytester.runpytest_subprocess(*NO_ASYNCIO, "--rampart-report-dir=out")
    assert list((pytester.path / "out" / "journal").glob("rampart-journal-*.jsonl"))
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, "--rampart-resume")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(
        ["*--rampart-resume: no run journal*journals are in out/journal*--rampart-report-dir*"]
    )
    resumed = pytester.runpytest_subprocess(*NO_ASYNCIO, "--rampart-resume=out/journal")
    resumed.assert_outcomes(errors=1, skipped=1)  # both reused from the journal
