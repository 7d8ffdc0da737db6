"""The journal's writer and reader on their own: torn lines from a killed writer,
hostile lines, resumed results, an unwritable journal."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rampart import Result, SafetyStatus
from rampart.pytest_plugin._journal import JournalWriter, read_journal
from rampart.pytest_plugin._ledger import Attribution, FinishedUnit, RecordedResult, UnitOutcome

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def _unit(summary: str, clone: int) -> FinishedUnit:
    result = Result(status=SafetyStatus.SAFE, summary=summary)
    attribution = Attribution(nodeid="t.py::test_x", name="test_x", clone=clone)
    return FinishedUnit(
        nodeid="t.py::test_x",
        name="test_x",
        clone=clone,
        results=(RecordedResult(result=result, attribution=attribution),),
        outcome=UnitOutcome.PASSED,
        test_hash="h",
    )


class TestWriterAndReader:
    def test_a_torn_line_never_swallows_the_next_record(self, tmp_path: Path) -> None:
        """A writer killed mid-line leaves a fragment; the next unit starts a new line,
        and the reader skips the fragment (and a torn tail) and counts them."""
        path = tmp_path / "journal.jsonl"
        writer = JournalWriter(path, run_id="r1")
        writer.write_unit(_unit("first", 0))
        with path.open("ab") as handle:
            handle.write(b'{"version":"rampart.trace.v2","result":{"stat')  # killed here
        writer.write_unit(_unit("second", 1))
        with path.open("ab") as handle:
            handle.write(b'{"version":"rampart.trace')  # a torn tail
        writer.close()
        contents = read_journal(path)
        assert [line.clone for line in contents.lines] == [0, 1]
        assert contents.skipped == 1
        assert contents.torn_tail

    def test_the_tail_is_read_only_when_the_file_grew_since_the_writers_last_line(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The writer's own lines end in a newline: it reads the file's last byte only
        when another writer appended since (which may have died mid-line)."""
        import rampart.pytest_plugin._journal as journal

        reads: list[int] = []
        real_pread = os.pread

        def pread(fd: int, length: int, offset: int) -> bytes:
            reads.append(offset)
            return real_pread(fd, length, offset)

        monkeypatch.setattr(journal.os, "pread", pread)
        path = tmp_path / "journal.jsonl"
        writer = JournalWriter(path, run_id="r1")
        for clone in range(3):
            writer.write_unit(_unit("own", clone))
        assert reads == []
        with path.open("ab") as handle:
            handle.write(b'{"version":"rampart.trace.v2"')  # another writer, killed
        writer.write_unit(_unit("after", 3))
        writer.write_unit(_unit("again", 4))
        assert len(reads) == 1
        writer.close()
        assert [line.clone for line in read_journal(path).lines] == [0, 1, 2, 3, 4]

    def test_hostile_lines_are_skipped_under_the_codec_json_policy(self, tmp_path: Path) -> None:
        """A line nested 100,000 deep, one with a duplicate key and one with NaN are read
        under the codec's one JSON policy: skipped and counted, never a RecursionError."""
        path = tmp_path / "journal.jsonl"
        writer = JournalWriter(path, run_id="r1")
        writer.write_unit(_unit("first", 0))
        good = path.read_text(encoding="utf-8").strip()
        hostile = [
            "[" * 100_000 + "]" * 100_000,
            good.replace('{"version":', '{"version":"x","version":', 1),
            good.replace('"summary":"first"', '"summary":"first","n":NaN', 1),
        ]
        assert all(line != good for line in hostile)
        with path.open("a", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in hostile))
        writer.write_unit(_unit("second", 1))
        writer.close()
        contents = read_journal(path)
        assert [line.clone for line in contents.lines] == [0, 1]
        assert contents.skipped == 3
        assert not contents.torn_tail

    def test_resumed_results_are_not_journaled_again(self, tmp_path: Path) -> None:
        path = tmp_path / "journal.jsonl"
        writer = JournalWriter(path, run_id="r2")
        unit = _unit("old", 0)
        resumed = FinishedUnit(
            nodeid=unit.nodeid,
            name=unit.name,
            clone=0,
            results=tuple(
                RecordedResult(result=r.result, attribution=r.attribution, resumed_from="r1")
                for r in unit.results
            ),
        )
        writer.write_unit(resumed)
        writer.close()
        assert not path.exists()

    def test_an_unwritable_journal_turns_itself_off_with_a_warning(self, tmp_path: Path) -> None:
        blocker = tmp_path / "file"
        blocker.write_text("not a directory")
        warnings: list[str] = []
        writer = JournalWriter(blocker / "journal.jsonl", run_id="r", on_error=warnings.append)
        writer.write_unit(_unit("a", 0))
        writer.write_unit(_unit("b", 1))
        assert not writer.enabled
        assert len(warnings) == 1
        assert "could not be written" in warnings[0]


def test_the_reader_names_each_unusable_line(tmp_path: Path) -> None:
    """The reader on its own: every kind of hostile line is named by number and why,
    without echoing its content; a torn last line is skipped silently."""
    path = tmp_path / "rampart-journal-x.jsonl"
    path.write_bytes(
        b'{"result":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
        b'{"of": 1}\n'
        b'{"a": NaN}\n'
        b'{"a": 1, "a": 2}\n'
        b"not json\n"
        b'{"result": {"status": "uns'
    )
    contents = read_journal(path)
    assert contents.lines == ()
    assert contents.problems == (
        # The codec's one JSON reading policy names what each line breaks.
        "line 1: $: JSON nesting is too deep (more than 128 levels of arrays and objects)",
        "line 2: not a journal record (no _rampart_journal bookkeeping)",
        "line 3: $: expected finite JSON numbers (NaN, Infinity and numbers that overflow a"
        " float are not accepted)",
        "line 4: $[<key #1>]: duplicate key (a member name may appear only once per object)",
        "line 5: $: expected JSON text (Expecting value at line 1 column 1)",
    )
    assert contents.torn_tail
