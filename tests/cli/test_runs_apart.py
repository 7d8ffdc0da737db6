"""Runs are kept apart: a report directory is its latest run for ``report``,
``validate`` and ``diff``; shards merge only with ``--merge``; a resumed run is one
logical run with the run it resumed; an xdist run is one run (the controller's report).

Every run here is a real pytest run writing into a real ``--rampart-report-dir``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.cli._cli import run_main
from tests.cli._suite import run_suite, write_suite

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

NO_ASYNCIO = ("-p", "no:asyncio", "-p", "no:cacheprovider")


def _two_runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A hardened run, then a regressed one, into one report directory: (dir, first
    report, second report)."""
    suite = write_suite(tmp_path / "suite")
    out = tmp_path / "out"
    first, _, _ = run_suite(suite, out, single=0.0, group=0.0)
    second, _, _ = run_suite(suite, out, single=1.0, group=0.6)
    assert first != second
    return out, first, second


def test_a_directory_is_its_latest_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs written to one directory: report, validate and diff read the latest
    (report says the other is there); diff of the directory compares the two."""
    out, first, second = _two_runs(tmp_path)
    latest = run_main(capsys, "report", out, "--summary", "groups")
    assert latest.status == 0, latest.err
    assert "(32 runs, 1 file)" in latest.lines[0]
    assert latest.lines[1] == (
        f"{out}: the latest run, {second.name}; 1 earlier run there not included (--merge "
        "merges the shards of one run; 'rampart history' lists runs)"
    )
    alone = run_main(capsys, "report", second, "--summary", "groups")
    assert latest.lines[2:] == alone.lines[1:]

    checked = run_main(capsys, "validate", out)
    assert checked.status == 0, checked.out
    assert checked.lines == ["checked 2 files, 64 records: all valid"]  # report + trace
    every = run_main(capsys, "validate", out, "--all")
    assert every.lines == ["checked 4 files, 128 records: all valid"]  # both runs

    compared = run_main(capsys, "diff", out, "--json")
    assert compared.status == 1  # the second run regressed
    diff = json.loads(compared.out)
    assert (diff["old"], diff["new"]) == (str(first), str(second))
    assert diff["regressions"] >= 1
    same = run_main(capsys, "diff", out, out)
    assert same.status == 0  # OLD and NEW: each directory's latest run, the same one
    assert same.lines[-1] == "no significant regression (alpha 0.05)"


def test_merge_refuses_runs_that_are_not_shards(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, first, second = _two_runs(tmp_path)
    merged = run_main(capsys, "report", first, second, "--merge")
    assert merged.status == 2
    assert f"--merge: {first} and {second} both ran test_suite.py::" in merged.err
    assert "--allow-overlap merges them anyway" in merged.err
    # A directory given to --merge adds its latest run only.
    alone = run_main(capsys, "report", out, "--merge", "--summary", "groups")
    assert alone.status == 0
    assert "(32 runs, 1 file)" in alone.lines[0]


_RESUMABLE = """
import pathlib
import pytest
from rampart import Result, SafetyStatus, record_result

HERE = pathlib.Path(__file__).parent

@pytest.mark.trial(n=10, concurrency=1, threshold=0.5)
def test_group(rampart_trial):
    if (HERE / "STOP").exists() and rampart_trial.index == 6:
        raise KeyboardInterrupt
    record_result(Result(status=SafetyStatus.SAFE, summary=f"clone {rampart_trial.index}"))

def test_plain():
    record_result(Result(status=SafetyStatus.SAFE, summary="plain"))
"""


def test_a_resumed_run_is_one_logical_run(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """An interrupted run and its resume, in one directory: the directory reads as the
    resume (10 clones, not 16); --merge of both files drops the one resumed; history
    lists one run."""
    pytester.makepyfile(_RESUMABLE)
    (pytester.path / "STOP").touch()
    out = pytester.path / "out"
    stopped = pytester.runpytest_subprocess(*NO_ASYNCIO, f"--rampart-report-dir={out}")
    assert stopped.ret == 2, stopped.stdout.str()
    (pytester.path / "STOP").unlink()
    resumed = pytester.runpytest_subprocess(
        *NO_ASYNCIO, f"--rampart-report-dir={out}", "--rampart-resume"
    )
    assert resumed.ret == 0, resumed.stdout.str()
    first, second = sorted(out.glob("run_report_*.json"))
    capsys.readouterr()  # the inner runs' output

    latest = run_main(capsys, "report", out, "--summary", "groups")
    assert "(11 runs, 1 file)" in latest.lines[0]
    assert any("test_group [10/10 safe" in line for line in latest.lines), latest.out
    merged = run_main(capsys, "report", first, second, "--merge", "--summary", "groups")
    assert merged.status == 0, merged.err
    assert merged.lines[1] == (
        f"{first}: resumed by {second} (one logical run, which holds its results): read "
        "once, as the resume"
    )
    assert "(11 runs, 1 file)" in merged.lines[0]
    history = run_main(capsys, "history", out, "--json")
    data = json.loads(history.out)
    assert [run["path"] for run in data["runs"]] == [str(second)]


def test_an_xdist_run_is_one_run(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under -n 2 the controller writes the one report of the run: a directory of two
    xdist runs is two runs, its latest one holding every test of the run."""
    pytester.makepyfile(_RESUMABLE)
    out = pytester.path / "out"
    for _ in range(2):
        result = pytester.runpytest_subprocess(
            *NO_ASYNCIO, "-n", "2", f"--rampart-report-dir={out}"
        )
        assert result.ret == 0, result.stdout.str()
    assert len(list(out.glob("run_report_*.json"))) == 2
    capsys.readouterr()  # the inner runs' output
    latest = run_main(capsys, "report", out, "--summary", "groups")
    assert "(11 runs, 1 file)" in latest.lines[0]
    assert "1 earlier run there not included" in latest.lines[1]
    history = json.loads(run_main(capsys, "history", out, "--json").out)
    assert len(history["runs"]) == 2
    assert all(run["results"] == 11 for run in history["runs"])


def test_validate_with_nothing_checked_is_not_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "traces_empty.jsonl"
    empty.write_text("")
    outcome = run_main(capsys, "validate", empty)
    assert outcome.status == 2
    assert outcome.lines == ["checked 1 file, 0 records: nothing checked (no record in them)"]
    nothing = tmp_path / "nothing"
    nothing.mkdir()
    outcome = run_main(capsys, "validate", nothing)
    assert outcome.status == 2
    assert outcome.err == (
        f"rampart validate: error: {nothing}: no saved run in it (run_report_*.json, "
        "traces_*.jsonl or journal/rampart-journal-*.jsonl)\n"
    )
    assert outcome.lines == [
        "checked 0 files, 0 records: nothing checked (no record in them); 1 not readable"
    ]


_KILLABLE = """
import os
from rampart import Result, SafetyStatus, record_result

def test_a():
    record_result(Result(status=SafetyStatus.SAFE, summary="fine"))

def test_b():
    if os.environ.get("KILL_RUN"):
        os._exit(9)  # killed before any report is written
"""


def test_a_newer_run_that_wrote_no_report_is_named(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The latest report is reported, and a journal of a run started after it (killed
    before its reports) is named, with the command that reads it."""
    pytester.makepyfile(_KILLABLE)
    out = pytester.path / "out"
    assert pytester.runpytest_subprocess(*NO_ASYNCIO, f"--rampart-report-dir={out}").ret == 0
    monkeypatch.setenv("KILL_RUN", "1")
    killed = pytester.runpytest_subprocess(*NO_ASYNCIO, f"--rampart-report-dir={out}")
    assert killed.ret == 9
    assert len(list(out.glob("run_report_*.json"))) == 1
    journal = max((out / "journal").glob("rampart-journal-*.jsonl"))
    capsys.readouterr()
    outcome = run_main(capsys, "report", out)
    assert outcome.status == 0
    assert outcome.lines[1] == (
        f"{journal}: a run that started after the latest report and wrote none (killed, or "
        f"still running); 'rampart report {journal}' reads what it journaled"
    )
    journaled = run_main(capsys, "report", journal)
    assert "(1 runs, 1 file)" in journaled.lines[0]  # test_a's one result
