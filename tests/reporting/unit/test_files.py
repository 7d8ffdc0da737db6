"""Atomic, never-overwriting report files and their UTC millisecond names."""

from __future__ import annotations

import errno
import os
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
import pytest

from rampart.reporting import _files

if TYPE_CHECKING:
    from pathlib import Path

UUID_NAME = re.compile(r"report_[0-9a-f]{32}\.json")


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


class TestTimestamp:
    def test_utc_millisecond_format(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The stamp is UTC with millisecond precision, using only filename-safe characters."""

        class FrozenDatetime(datetime):
            @classmethod
            def now(cls, tz: object = None) -> FrozenDatetime:
                assert tz is UTC
                return cls(2026, 4, 25, 14, 30, 0, 123_999, tzinfo=UTC)

        monkeypatch.setattr(_files, "datetime", FrozenDatetime)
        assert _files.utc_timestamp() == "2026-04-25T14-30-00-123"

    def test_real_clock_shape(self) -> None:
        """Without a frozen clock the stamp still has the documented shape."""
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}", _files.utc_timestamp())


class TestWriteNewFile:
    def test_writes_under_plain_name(self, tmp_path: Path) -> None:
        """A free name is used as is, the directory is created, and no temp file stays."""
        target = tmp_path / "nested" / "dir"
        path = _files.write_new_file(target, stem="report", suffix=".json", data=b"{}\n")
        assert path == target / "report.json"
        assert path.read_bytes() == b"{}\n"
        assert _names(target) == ["report.json"]

    def test_collision_gets_uuid_suffix(self, tmp_path: Path) -> None:
        """A taken name is never replaced; the new file gets ``_<uuid hex>`` instead."""
        existing = tmp_path / "report.json"
        existing.write_bytes(b"original")
        path = _files.write_new_file(tmp_path, stem="report", suffix=".json", data=b"new")
        assert existing.read_bytes() == b"original"
        assert UUID_NAME.fullmatch(path.name)
        assert path.read_bytes() == b"new"
        assert len(_names(tmp_path)) == 2

    def test_a_fifo_at_the_name_is_never_opened_or_replaced(self, tmp_path: Path) -> None:
        """A report sink's fixed name held by a FIFO: the FIFO stays (never opened, which
        would block, never renamed over) and the report gets a new name."""
        import stat

        fifo = tmp_path / "report.json"
        os.mkfifo(fifo)
        path = _files.write_new_file(tmp_path, stem="report", suffix=".json", data=b"new")
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
        assert UUID_NAME.fullmatch(path.name)
        assert path.read_bytes() == b"new"

    def test_gives_up_after_bounded_attempts(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """If every candidate name is taken, FileExistsError is raised and nothing leaks."""
        monkeypatch.setattr(_files, "_candidate_names", lambda stem, suffix: ["a.json"])
        (tmp_path / "a.json").write_bytes(b"keep")
        with pytest.raises(FileExistsError, match="Unable to reserve a unique filename"):
            _files.write_new_file(tmp_path, stem="a", suffix=".json", data=b"x")
        assert _names(tmp_path) == ["a.json"]
        assert (tmp_path / "a.json").read_bytes() == b"keep"

    def test_failed_write_leaves_nothing(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """When the data cannot be flushed, the temp file is removed and no report appears."""

        def failing_fsync(fd: int) -> None:
            raise OSError(errno.EIO, "disk on fire")

        monkeypatch.setattr(os, "fsync", failing_fsync)
        with pytest.raises(OSError, match="disk on fire"):
            _files.write_new_file(tmp_path, stem="report", suffix=".json", data=b"x")
        assert _names(tmp_path) == []

    def test_fallback_without_hard_links(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without hard links the file is created exclusively: still no overwrite, no temp."""

        def no_link(src: object, dst: object) -> None:
            raise OSError(errno.EPERM, "links not supported")

        monkeypatch.setattr(os, "link", no_link)
        (tmp_path / "report.json").write_bytes(b"original")
        path = _files.write_new_file(tmp_path, stem="report", suffix=".json", data=b"new")
        assert UUID_NAME.fullmatch(path.name)
        assert path.read_bytes() == b"new"
        assert (tmp_path / "report.json").read_bytes() == b"original"
        assert len(_names(tmp_path)) == 2

    def test_fallback_failure_removes_own_file(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """If the fallback write fails, the half-written file it created is removed."""

        def no_link(src: object, dst: object) -> None:
            raise OSError(errno.EPERM, "links not supported")

        real_fsync = os.fsync
        calls = []

        def second_fsync_fails(fd: int) -> None:
            calls.append(fd)
            if len(calls) == 2:  # the first fsync is the temp file's
                raise OSError(errno.EIO, "disk on fire")
            real_fsync(fd)

        monkeypatch.setattr(os, "link", no_link)
        monkeypatch.setattr(os, "fsync", second_fsync_fails)
        with pytest.raises(OSError, match="disk on fire"):
            _files.write_new_file(tmp_path, stem="report", suffix=".json", data=b"x")
        assert _names(tmp_path) == []

    @pytest.mark.anyio
    async def test_concurrent_writers_get_distinct_files(self, tmp_path: Path) -> None:
        """Many threads racing for one name each get their own file; none is lost."""
        count = 20

        async def write_one(i: int) -> None:
            await anyio.to_thread.run_sync(
                lambda: _files.write_new_file(
                    tmp_path, stem="report", suffix=".json", data=str(i).encode()
                )
            )

        async with anyio.create_task_group() as tg:
            for i in range(count):
                tg.start_soon(write_one, i)
        names = _names(tmp_path)
        assert len(names) == count
        assert "report.json" in names
        contents = sorted(int((tmp_path / name).read_bytes()) for name in names)
        assert contents == list(range(count))


class TestOutputDirIsAFile:
    """``output_dir`` naming an existing file fails with what was expected, not errno 17."""

    @pytest.mark.parametrize("sink", ["JsonFileReportSink", "JsonlTraceSink", "HtmlReportSink"])
    def test_rejected_on_construction(self, tmp_path: Path, sink: str) -> None:
        """The sink refuses a file (or a path under one) when it is built."""
        import rampart.reporting

        cls = getattr(rampart.reporting, sink)
        target = tmp_path / "report.json"
        target.write_text("{}")
        with pytest.raises(NotADirectoryError) as caught:
            cls(output_dir=target)
        assert str(caught.value) == (
            f"{sink}: output_dir must be a directory, or a path where one can be created, "
            f"got {str(target)!r} (an existing file)"
        )
        with pytest.raises(NotADirectoryError, match=r"\(under an existing file\)$"):
            cls(output_dir=target / "reports")
        assert target.read_text() == "{}"

    @pytest.mark.anyio
    @pytest.mark.parametrize("sink", ["JsonFileReportSink", "JsonlTraceSink", "HtmlReportSink"])
    async def test_rejected_on_write(self, tmp_path: Path, sink: str) -> None:
        """A file that appears after construction is reported the same way on write."""
        import rampart.reporting

        cls = getattr(rampart.reporting, sink)
        target = tmp_path / "out"
        writer = cls(output_dir=target)
        target.write_text("not a directory")
        with pytest.raises(NotADirectoryError, match=rf"^{sink}: output_dir must be a directory"):
            await writer.write(report=rampart.reporting.TestRunReport())
        assert target.read_text() == "not a directory"
