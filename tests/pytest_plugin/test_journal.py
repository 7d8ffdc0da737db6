"""The run journal: canonical records, one per finished result, written as they finish.

Plus kill -9 of a real run, where journals go, and the start-up clean-up of stale
temporary files. The writer and reader on their own are units (``unit/test_journal.py``).
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

from rampart.codec import deserialize_record
from tests.pytest_plugin._subprocess import (
    PytestProcess,
    journal_files,
    journal_keys,
    journal_lines,
)
from tests.pytest_plugin.conftest import NO_ASYNCIO, REPORT_HOOK, only_report, write_ini

if TYPE_CHECKING:
    import pytest

SUITE = """
import pytest
from rampart import Result, SafetyStatus, record_result

def test_plain():
    record_result(Result(status=SafetyStatus.SAFE, summary="plain 0"))
    record_result(Result(status=SafetyStatus.UNSAFE, summary="plain 1"))
    assert False, "the plain test fails"

@pytest.mark.trial(n=3)
async def test_group(rampart_trial):
    record_result(Result(status=SafetyStatus.SAFE, summary=f"clone {rampart_trial.index}"))
    assert rampart_trial.index != 1, "clone 1 fails its own assertion"
"""


def test_every_result_is_a_canonical_journal_line(pytester: pytest.Pytester) -> None:
    """One line per result, each a rampart.trace.v2 record that decodes, carrying the run
    id (the report's), the test, the clone index, its position and the unit's outcome."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(SUITE)
    result = pytester.runpytest(*NO_ASYNCIO)
    result.assert_outcomes(failed=2)
    report = only_report(pytester)
    (journal,) = journal_files(pytester.path)
    assert report["metadata"]["journal"] == str(journal)
    lines = journal_lines(pytester.path)
    assert len(lines) == 5
    records = [deserialize_record(data=line.decode()) for line in lines]
    keys = [record.result.metadata["_rampart_journal"] for record in records]
    assert {key["run"] for key in keys} == {report["metadata"]["run_id"]}
    seen = sorted(
        (key["nodeid"].split("::")[1], key["clone"], key["index"], key["of"], key["outcome"])
        for key in keys
    )
    assert seen == [
        ("test_group", 0, 0, 1, "passed"),
        ("test_group", 1, 0, 1, "failed"),
        ("test_group", 2, 0, 1, "passed"),
        ("test_plain", None, 0, 2, "failed"),
        ("test_plain", None, 1, 2, "failed"),
    ]
    by_summary = {record.result.summary: record for record in records}
    assert by_summary["clone 2"].pytest_nodeid.endswith("test_group[trial-2]")
    assert by_summary["plain 1"].result_index == 1
    details = {(key["clone"], key["detail"].split(":")[0]) for key in keys if key["detail"]}
    failed = {key["clone"]: key["detail"] for key in keys if key["outcome"] == "failed"}
    assert "clone 1 fails its own assertion" in failed[1]
    assert "the plain test fails" in failed[None]
    assert (0, "") not in details


def test_clones_are_journaled_while_the_group_still_runs(pytester: pytest.Pytester) -> None:
    """Clone 3 waits until the journal holds clones 0-2: they are on disk as soon as they
    finish, not when the test is over."""
    write_ini(pytester)
    pytester.makepyfile(
        """
        import json
        import pathlib
        import anyio
        import pytest
        from rampart import Result, SafetyStatus, record_result

        def journaled_clones():
            found = set()
            for path in pathlib.Path(__file__).parent.glob(".rampart/journal/*.jsonl"):
                for line in path.read_bytes().splitlines():
                    key = json.loads(line)["result"]["metadata"]["_rampart_journal"]
                    found.add(key["clone"])
            return found

        @pytest.mark.trial(n=4, concurrency=4)
        async def test_group(rampart_trial):
            if rampart_trial.index == 3:
                with anyio.fail_after(60):
                    while not {0, 1, 2} <= journaled_clones():
                        await anyio.sleep(0.01)
            record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
        """
    )
    pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=1)
    assert sorted(key["clone"] for key in journal_keys(pytester.path)) == [0, 1, 2, 3]


def test_kill_9_keeps_every_finished_clone_and_a_decodable_journal(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester)
    pytester.makepyfile(
        """
        import pathlib
        import anyio
        import pytest
        from rampart import Result, SafetyStatus, record_result

        @pytest.mark.trial(n=30, concurrency=3)
        async def test_group(rampart_trial):
            record_result(Result(status=SafetyStatus.SAFE, summary="x" * 5000))
            if rampart_trial.index >= 20:
                (pathlib.Path(__file__).parent / "blocked").touch()
                await anyio.sleep(600)
        """
    )
    run = PytestProcess(pytester.path)
    run.wait_until(
        lambda: (pytester.path / "blocked").exists() and len(journal_lines(pytester.path)) >= 20,
        "twenty clones journaled",
    )
    run.kill()
    run.finish()
    assert len(journal_files(pytester.path)) == 1
    # Every complete line decodes, and the first twenty clones are all there.
    for line in journal_lines(pytester.path):
        deserialize_record(data=line.decode())
    assert sorted(keys["clone"] for keys in journal_keys(pytester.path))[:20] == list(range(20))


class TestWhereJournalsGo:
    def test_default_place_is_ignored_by_git_and_made_only_when_needed(
        self, pytester: pytest.Pytester
    ) -> None:
        write_ini(pytester)
        pytester.makepyfile("def test_nothing():\n    pass\n")
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=1)
        assert not (pytester.path / ".rampart").exists()
        pytester.makepyfile(SUITE)
        pytester.runpytest(*NO_ASYNCIO)
        assert (pytester.path / ".rampart" / ".gitignore").read_text().splitlines()[-1] == "*"
        assert len(journal_files(pytester.path)) == 1

    def test_under_the_report_dir(self, pytester: pytest.Pytester) -> None:
        """With --rampart-report-dir, journals go to its journal/ directory."""
        write_ini(pytester)
        pytester.makepyfile(SUITE)
        pytester.runpytest(*NO_ASYNCIO, "--rampart-report-dir", "out")
        assert len(list((pytester.path / "out" / "journal").glob("rampart-journal-*"))) == 1
        assert not (pytester.path / ".rampart").exists()

    def test_option_and_off(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester)
        pytester.makepyfile(SUITE)
        pytester.runpytest(*NO_ASYNCIO, "--rampart-journal", "journals")
        assert len(list((pytester.path / "journals").glob("rampart-journal-*.jsonl"))) == 1
        pytester.runpytest(*NO_ASYNCIO, "--rampart-journal=off")
        assert not (pytester.path / ".rampart").exists()
        write_ini(pytester, "rampart_journal = off")
        pytester.runpytest(*NO_ASYNCIO)
        assert not (pytester.path / ".rampart").exists()


def test_stale_temporaries_are_removed_and_nothing_else(pytester: pytest.Pytester) -> None:
    """At start-up (the journal's place) and before the reports are written (each file
    sink's directory), rampart's own temporary files older than the session go; recent
    ones, other names and other files stay."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(SUITE)
    hexa = "0123456789abcdef" * 2
    journal_dir = pytester.path / ".rampart" / "journal"
    report_dir = pytester.path / "reports"
    stale = [
        journal_dir / f".rampart-tmp.run_report_x.{hexa}.tmp",
        report_dir / f".run_report_2026-01-01T00-00-00-000.{hexa}.tmp",  # earlier versions
        report_dir / f".rampart-tmp.traces_y.{hexa}.tmp",
    ]
    kept = [
        report_dir / f".rampart-tmp.run_report_fresh.{hexa}.tmp",  # a run writing now
        report_dir / f".someone-else.{hexa}.tmp",
        report_dir / "notes.txt",
        journal_dir / "rampart-journal-old.jsonl",
    ]
    hour_ago = time.time() - 3600
    for path in stale + kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
        if "fresh" not in path.name:
            os.utime(path, (hour_ago, hour_ago))
    pytester.runpytest(*NO_ASYNCIO)
    assert [path for path in stale if path.exists()] == []
    assert [path for path in kept if not path.exists()] == []
    assert json.loads(next(report_dir.glob("run_report_*.json")).read_text())["total_runs"] == 5
