"""``--rampart-report-dir DIR``: the built-in sinks, with no conftest code.

The option (or ini ``rampart_report_dir``) adds a JSON report, a JSONL trace and an
HTML report in ``DIR`` to whatever the ``pytest_rampart_sinks`` hook (or the deprecated
fixture) provides; they are emitted and checked like any other sink.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path

    from rampart.reporting import ReportSink

__all__ = ["report_dir_sinks"]


def report_dir_sinks(directory: Path | None) -> list[ReportSink]:
    """The three built-in sinks writing to ``directory``; none when it is ``None``.

    Made when pytest configures the run, so a path that cannot be a directory (an
    existing file, say) is a usage error before any test runs, naming the option.
    """
    if directory is None:
        return []
    from rampart.reporting import HtmlReportSink, JsonFileReportSink, JsonlTraceSink

    try:
        return [
            JsonFileReportSink(output_dir=directory),
            JsonlTraceSink(output_dir=directory),
            HtmlReportSink(output_dir=directory),
        ]
    except (TypeError, ValueError, OSError) as exc:
        raise pytest.UsageError(
            f"rampart: --rampart-report-dir / rampart_report_dir: {exc}"
        ) from None
