"""CI shards merge (issue 20 section 3): a suite run as three shards -- separate
processes and report directories, each with its journal, as CI matrix jobs run it --
merges with ``rampart report`` into the trial-group verdicts and counts of one
single-host run, and the merged report says which shards it holds."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING, Any

from tests.cli._cli import run_main

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

_HEAD = """
import pytest
from rampart import Result, SafetyStatus, record_result


def record(status):
    record_result(Result(status=status, summary=status.value))
"""

_SUITE = {
    "test_a.py": """
@pytest.mark.trial(n=12, threshold=0.5)
def test_some_unsafe(rampart_trial):
    unsafe = rampart_trial.index % 4 == 0
    record(SafetyStatus.UNSAFE if unsafe else SafetyStatus.SAFE)

def test_plain_safe():
    record(SafetyStatus.SAFE)
""",
    "test_b.py": """
@pytest.mark.trial(n=10, threshold=0.8, max_unsafe=2)
def test_tolerated(rampart_trial):
    record(SafetyStatus.UNSAFE if rampart_trial.index < 2 else SafetyStatus.SAFE)

def test_plain_unsafe():
    record(SafetyStatus.UNSAFE)
""",
    "test_c.py": """
@pytest.mark.trial(n=20, threshold=0.9, confidence=0.95)
def test_inconclusive(rampart_trial):
    record(SafetyStatus.SAFE)

@pytest.mark.trial(n=6, threshold=0.5)
def test_half_silent(rampart_trial):
    if rampart_trial.index < 3:
        record(SafetyStatus.SAFE)
    assert rampart_trial.index != 1
""",
}

_COUNTS = ("total_runs", "passed", "failed", "undetermined", "errors")


def _run(suite: Path, out: str, *paths: str) -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:asyncio",
            "-p",
            "no:cacheprovider",
            "-q",
            f"--rampart-report-dir={out}",
            *paths,
        ],
        cwd=suite,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert completed.returncode in (0, 1), completed.stdout + completed.stderr


def _groups(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    keep = ("verdict", "counts", "executed", "population_status", "reason", "n")
    return {g["nodeid"]: {k: g[k] for k in keep} for g in document["trial_groups"]}


def test_three_shards_merge_into_the_single_host_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\nrampart_inconclusive = xfail\n")
    for name, body in _SUITE.items():
        (suite / name).write_text(_HEAD + body)
    _run(suite, "single")
    for shard, name in enumerate(sorted(_SUITE), start=1):
        _run(suite, f"shards/{shard}", name)
        assert list((suite / f"shards/{shard}/journal").glob("rampart-journal-*.jsonl"))

    (single_path,) = (suite / "single").glob("run_report_*.json")
    single = json.loads(single_path.read_text(encoding="utf-8"))
    merged_path = tmp_path / "merged.json"
    outcome = run_main(capsys, "report", suite / "shards", "--merge", "--json", merged_path)
    assert outcome.status == 0, outcome.err
    reports = sorted((suite / "shards").glob("*/run_report_*.json"))
    assert len(reports) == 3
    assert outcome.lines[1] == f"merged 3 runs: {', '.join(str(path) for path in reports)}"
    merged = json.loads(merged_path.read_text(encoding="utf-8"))
    assert merged["metadata"]["merged_from"] == [str(path) for path in reports]
    assert _groups(merged) == _groups(single)
    assert {key: merged[key] for key in _COUNTS} == {key: single[key] for key in _COUNTS}
    verdicts = {nodeid: g["verdict"] for nodeid, g in _groups(single).items()}
    assert verdicts == {
        "test_a.py::test_some_unsafe": "failed",
        "test_b.py::test_tolerated": "passed",
        "test_c.py::test_inconclusive": "inconclusive",
        "test_c.py::test_half_silent": "failed",
    }
    assert run_main(capsys, "validate", merged_path).status == 0

    # Shards that never wrote a report leave their journals: the groups every clone
    # of which recorded a result merge into the same verdicts and counts; the group
    # whose silent clones a journal cannot show is INCOMPLETE, never a pass.
    journals = [suite / f"shards/{shard}/journal" for shard in (1, 2, 3)]
    from_journals = tmp_path / "journals.json"
    outcome = run_main(capsys, "report", *journals, "--merge", "--json", from_journals, "-q")
    assert outcome.status == 0, outcome.err
    rebuilt = _groups(json.loads(from_journals.read_text(encoding="utf-8")))
    expected = _groups(single)
    silent = rebuilt.pop("test_c.py::test_half_silent")
    assert silent["verdict"] == "incomplete"
    del expected["test_c.py::test_half_silent"]
    assert rebuilt == expected
