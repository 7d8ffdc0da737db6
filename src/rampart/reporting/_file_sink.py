"""What the report-file sinks share: the checked ``output_dir``, the new-file write in a
worker thread and ``last_path``. A subclass renders the content and names the file
(by default ``run_report_<UTC timestamp><suffix>``)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, ClassVar

import anyio.to_thread

from rampart._checks import check_instance, check_path
from rampart.reporting import _files
from rampart.reporting._report import TestRunReport

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["ReportFileSink"]


class ReportFileSink:
    """Writes each report to a new ``<output_dir>/run_report_<UTC timestamp><suffix>``."""

    suffix: ClassVar[str]

    def __init__(self, *, output_dir: Path | str) -> None:
        owner = type(self).__name__
        self._output_dir = _files.check_output_dir(
            owner, check_path(owner, "output_dir", output_dir)
        )
        self._last_path: Path | None = None

    @property
    def output_dir(self) -> Path:
        return self._output_dir

    @property
    def last_path(self) -> Path | None:
        """The file the most recent completed write produced, or ``None``."""
        return self._last_path

    def __repr__(self) -> str:
        return f"{type(self).__name__}(output_dir={str(self._output_dir)!r})"

    def _content(self, report: TestRunReport) -> _files.Content:
        """The file's content (runs in the worker thread)."""
        raise NotImplementedError

    def _name(self) -> tuple[str, str]:
        """The new file's ``(stem, suffix)``."""
        return f"run_report_{_files.utc_timestamp()}", self.suffix

    def _write_blocking(self, report: TestRunReport) -> Path:
        stem, suffix = self._name()
        return _files.write_new_file(
            self._output_dir,
            stem=stem,
            suffix=suffix,
            data=self._content(report),
            owner=type(self).__name__,
        )

    async def write(self, *, report: TestRunReport) -> Path:
        """Write ``report`` to a new file and return its path."""
        owner = f"{type(self).__name__}.write"
        check_instance(owner, "report", report, TestRunReport, expected="a TestRunReport")
        path = await anyio.to_thread.run_sync(functools.partial(self._write_blocking, report))
        self._last_path = path
        return path

    async def emit_async(self, *, report: TestRunReport) -> None:
        """:class:`ReportSink` entry point: :meth:`write` the report."""
        await self.write(report=report)
