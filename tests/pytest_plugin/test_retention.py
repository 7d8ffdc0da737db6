"""Retention: the report directory keeps the newest ``--rampart-keep-runs`` runs and the
journal directory the newest ``--rampart-keep-journals`` journals (ini options too);
only files named as rampart names them are removed; bad values are usage errors
naming the option."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rampart.pytest_plugin._retention import DEFAULT_KEEP_JOURNALS, DEFAULT_KEEP_RUNS
from tests.pytest_plugin.conftest import NO_ASYNCIO, write_ini

SUITE = """
from rampart import Result, SafetyStatus, record_result

def test_one():
    record_result(Result(status=SafetyStatus.SAFE, summary="fine"))
"""

KINDS = ("run_report_*.json", "run_report_*.html", "traces_*.jsonl")


def _files(out: Path) -> dict[str, list[str]]:
    """The files of each kind rampart wrote (named by their UTC time: ``..._2026-...``)."""
    return {kind: sorted(path.name for path in out.glob(kind.replace("*", "2*"))) for kind in KINDS}


def _journals(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.glob("rampart-journal-*.jsonl"))


def test_keep_runs_and_journals_from_the_command_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SUITE)
    out = pytester.path / "out"
    seen: list[dict[str, list[str]]] = []
    for _ in range(3):
        result = pytester.runpytest(
            *NO_ASYNCIO,
            f"--rampart-report-dir={out}",
            "--rampart-keep-runs=2",
            "--rampart-keep-journals=1",
        )
        assert result.ret == 0, result.stdout.str()
        seen.append(_files(out))
        if len(seen) == 1:
            (out / "notes.txt").write_text("mine")  # not rampart's: never removed
            (out / "run_report_mine.json").write_text("{}")
    for kind in KINDS:
        everything = sorted({name for files in seen for name in files[kind]})
        assert len(everything) == 3
        assert seen[-1][kind] == everything[1:]  # the two newest runs' files
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "run_report_mine.json").exists()
    # The journal kept is the last run's (its report names it).
    (journal,) = _journals(out / "journal")
    latest = json.loads((out / seen[-1]["run_report_*.json"][-1]).read_text())
    assert Path(latest["metadata"]["journal"]).name == journal


def test_ini_options_and_all(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SUITE)
    write_ini(
        pytester, "rampart_report_dir = out", "rampart_keep_runs = all", "rampart_keep_journals = 0"
    )
    for _ in range(3):
        assert pytester.runpytest(*NO_ASYNCIO).ret == 0
    out = pytester.path / "out"
    assert all(len(names) == 3 for names in _files(out).values())
    # 0 keeps none but the journal this run wrote.
    assert len(_journals(out / "journal")) == 1


def test_the_documented_defaults(pytester: pytest.Pytester) -> None:
    """Older runs beyond the default are removed, oldest first."""
    pytester.makepyfile(SUITE)
    out = pytester.path / "out"
    journal = out / "journal"
    journal.mkdir(parents=True)
    for index in range(DEFAULT_KEEP_RUNS + 5):
        stamp = f"2020-01-01T00-00-{index // 1000:02d}-{index % 1000:03d}"
        (out / f"run_report_{stamp}.json").write_text("{}")
        (journal / f"rampart-journal-{stamp}-0123456789ab.jsonl").write_text("")
    assert pytester.runpytest(*NO_ASYNCIO, f"--rampart-report-dir={out}").ret == 0
    reports = sorted(path.name for path in out.glob("run_report_*.json"))
    assert len(reports) == DEFAULT_KEEP_RUNS
    assert reports[0] == "run_report_2020-01-01T00-00-00-006.json"  # 6 oldest removed
    assert not reports[-1].startswith("run_report_2020")  # this run's report
    journals = _journals(journal)
    assert len(journals) == DEFAULT_KEEP_JOURNALS
    assert not journals[-1].startswith("rampart-journal-2020")


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (
            ["--rampart-keep-runs=-1"],
            [],
            "rampart: --rampart-keep-runs must be a whole number of runs (0 or more) or "
            "'all', got '-1'",
        ),
        (
            [],
            ["rampart_keep_journals = many"],
            "rampart: ini option rampart_keep_journals must be a whole number of runs (0 or "
            "more) or 'all', got 'many'",
        ),
    ],
)
def test_bad_values_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], ini: list[str], message: str
) -> None:
    pytester.makepyfile(SUITE)
    write_ini(pytester, *ini)
    result = pytester.runpytest(*NO_ASYNCIO, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {message}" in result.stderr.lines
