"""``JsonlTraceSink``: canonical records, one per line, never overwriting."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import pytest

from rampart.codec import (
    TRACE_SCHEMA_VERSION,
    ResultRecord,
    deserialize_record,
    serialize_record,
)
from rampart.core import SafetyStatus

# Private seam: _files.utc_timestamp is frozen so file names can be predicted.
from rampart.reporting import JsonlTraceSink, ReportError, ReportSink, TestRunReport, _files
from tests._builders import make_result, make_rich_result

if TYPE_CHECKING:
    from pathlib import Path

STAMP = "2026-04-25T14-30-00-123"


def _listing(directory: Path) -> list[Path]:
    """Files in ``directory`` (sorted), or [] when it was never created."""
    return sorted(directory.iterdir()) if directory.exists() else []


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> str:
    """Every file in the test gets the same timestamp."""
    monkeypatch.setattr(_files, "utc_timestamp", lambda: STAMP)
    return STAMP


class TestRecords:
    @pytest.mark.anyio
    async def test_each_line_deserializes(self, tmp_path: Path, frozen_clock: str) -> None:
        """Every line is a canonical record that reads back to the same result."""
        results = [
            make_rich_result(),
            make_result(SafetyStatus.ERROR, summary="line one\nline two"),
            make_result(metadata={"_pytest_nodeid": "t.py::test_b", "_rampart_result_index": 3}),
        ]
        sink = JsonlTraceSink(output_dir=tmp_path)
        await sink.emit_async(report=TestRunReport.from_results(results))
        assert sink.last_path == tmp_path / f"traces_{STAMP}.jsonl"
        lines = sink.last_path.read_text(encoding="utf-8").splitlines()
        assert len(lines) == 3
        for line, result in zip(lines, results, strict=True):
            assert json.loads(line)["version"] == TRACE_SCHEMA_VERSION
            record = deserialize_record(data=line)
            assert record.result.status is result.status
            assert record.result.summary == result.summary
            assert record.result.metadata == result.metadata
        assert deserialize_record(data=lines[0]).result.turns == results[0].turns

    @pytest.mark.anyio
    @pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
    async def test_unicode_line_separators_are_escaped(
        self, tmp_path: Path, frozen_clock: str, separator: str
    ) -> None:
        """Agent text holding U+2028/U+2029/U+0085 keeps each record on one line.

        ``str.splitlines()`` splits on those characters; the writer escapes them (still
        valid JSON) so that every line reader, that one included, sees whole records.
        """
        summary = f"first{separator}second"
        metadata = {f"key{separator}": [f"value{separator}"]}
        results = [make_result(summary=summary, metadata=metadata), make_result()]
        path = await JsonlTraceSink(output_dir=tmp_path).write(
            report=TestRunReport.from_results(results)
        )
        text = path.read_text(encoding="utf-8")
        assert separator not in text
        lines = text.splitlines()
        assert len(lines) == 2
        assert lines == text.split("\n")[:-1]
        record = deserialize_record(data=lines[0])
        assert record.result.summary == summary
        assert record.result.metadata == metadata
        assert json.loads(lines[0])["result"]["summary"] == summary

    @pytest.mark.anyio
    async def test_lines_are_serialize_record_output(
        self, tmp_path: Path, frozen_clock: str
    ) -> None:
        """A line is exactly what ``serialize_record`` produces, attribution included."""
        result = make_rich_result()
        path = await JsonlTraceSink(output_dir=tmp_path).write(
            report=TestRunReport.from_results([result])
        )
        expected = serialize_record(
            record=ResultRecord(
                result=result,
                pytest_nodeid="tests/test_x.py::test_exfil[trial-2]",
                result_index=0,
            )
        )
        assert path.read_text(encoding="utf-8") == expected + "\n"

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("metadata", "nodeid", "index"),
        [
            ({}, None, None),
            ({"_pytest_nodeid": "a.py::t", "_rampart_result_index": 2}, "a.py::t", 2),
            ({"_pytest_nodeid": 5, "_rampart_result_index": -1}, None, None),
            ({"_pytest_nodeid": "a.py::t", "_rampart_result_index": True}, "a.py::t", None),
            ({"_rampart_result_index": 1.0}, None, None),
        ],
    )
    async def test_attribution_only_when_valid(
        self,
        tmp_path: Path,
        frozen_clock: str,
        metadata: dict[str, object],
        nodeid: str | None,
        index: int | None,
    ) -> None:
        """pytest_nodeid / result_index come from metadata only when well-formed."""
        path = await JsonlTraceSink(output_dir=tmp_path).write(
            report=TestRunReport.from_results([make_result(metadata=metadata)])
        )
        record = deserialize_record(data=path.read_text(encoding="utf-8").strip())
        assert (record.pytest_nodeid, record.result_index) == (nodeid, index)

    @pytest.mark.anyio
    async def test_empty_report_writes_empty_file(self, tmp_path: Path, frozen_clock: str) -> None:
        """A run without results still produces its (empty) trace file."""
        path = await JsonlTraceSink(output_dir=tmp_path).write(report=TestRunReport())
        assert path.read_bytes() == b""


class TestNaming:
    @pytest.mark.anyio
    async def test_default_name_shape(self, tmp_path: Path) -> None:
        """The default name is traces_<UTC ms>.jsonl."""
        path = await JsonlTraceSink(output_dir=tmp_path).write(report=TestRunReport())
        assert re.fullmatch(r"traces_\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}\.jsonl", path.name)

    @pytest.mark.anyio
    async def test_fixed_filename_never_overwritten(self, tmp_path: Path) -> None:
        """A fixed filename is used once; later writes get a UUID suffix, never append."""
        sink = JsonlTraceSink(output_dir=tmp_path, filename="run.jsonl")
        first = await sink.write(report=TestRunReport.from_results([make_result()]))
        second = await sink.write(report=TestRunReport.from_results([make_result()]))
        assert first == tmp_path / "run.jsonl"
        assert re.fullmatch(r"run_[0-9a-f]{32}\.jsonl", second.name)
        assert len(first.read_text(encoding="utf-8").splitlines()) == 1
        assert sink.last_path == second

    @pytest.mark.anyio
    async def test_existing_default_name_kept(self, tmp_path: Path, frozen_clock: str) -> None:
        """A pre-existing file at the timestamped name is left untouched."""
        existing = tmp_path / f"traces_{STAMP}.jsonl"
        existing.write_text("old\n", encoding="utf-8")
        path = await JsonlTraceSink(output_dir=tmp_path).write(report=TestRunReport())
        assert existing.read_text(encoding="utf-8") == "old\n"
        assert path != existing

    @pytest.mark.parametrize("name", ["", ".", "..", "a/b.jsonl", "nul\x00.jsonl"])
    def test_bad_filename(self, tmp_path: Path, name: str) -> None:
        """filename must be a bare name; the error names the argument."""
        with pytest.raises(ValueError, match="filename must be a bare file name"):
            JsonlTraceSink(output_dir=tmp_path, filename=name)

    def test_non_str_filename(self, tmp_path: Path) -> None:
        """A non-string filename is a TypeError naming the argument."""
        with pytest.raises(
            TypeError,
            match=r"^JsonlTraceSink: filename must be a bare file name .* or None, got 3$",
        ):
            JsonlTraceSink(output_dir=tmp_path, filename=3)  # type: ignore[arg-type]


class TestFailures:
    @pytest.mark.anyio
    async def test_rejected_result_writes_nothing(self, tmp_path: Path, frozen_clock: str) -> None:
        """A result the codec rejects raises ReportError naming it; no file is left."""
        report = TestRunReport.from_results(
            [make_result(), make_result(metadata={"_pytest_nodeid": "x.py::t", "b": b"\x00"})]
        )
        sink = JsonlTraceSink(output_dir=tmp_path)
        with pytest.raises(ReportError, match=r"report\.results\[1\] \(test 'x\.py::t'\)"):
            await sink.emit_async(report=report)
        assert sink.last_path is None
        assert _listing(tmp_path) == []

    def test_is_a_report_sink(self, tmp_path: Path) -> None:
        """The trace sink satisfies the ReportSink protocol."""
        assert isinstance(JsonlTraceSink(output_dir=tmp_path), ReportSink)
