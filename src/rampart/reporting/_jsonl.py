"""``JsonlTraceSink``: every result as one canonical ``rampart.trace`` record per line."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

from rampart._checks import check_optional_filename
from rampart.reporting import _files
from rampart.reporting._canonical import encode_record, record_attribution
from rampart.reporting._file_sink import ReportFileSink
from rampart.reporting._stored import StoredResults

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rampart.reporting._report import TestRunReport

__all__ = ["JsonlTraceSink"]


def render_traces(report: TestRunReport) -> bytes:
    """One ``serialize_record`` line per result, in report order; UTF-8.

    A record carries ``pytest_nodeid`` / ``result_index`` when the result's metadata
    holds valid ``_pytest_nodeid`` / ``_rampart_result_index`` values. Unicode line
    separators in strings are escaped (the codec's JSONL writer,
    :func:`rampart.codec._jsonl.jsonl_line`), so ``splitlines()`` works too.
    """
    return b"".join(trace_chunks(report))


def trace_chunks(report: TestRunReport) -> Iterator[bytes]:
    """``render_traces``'s lines one at a time (a result is loaded only when written;
    a stored record text is written as it is)."""
    from rampart.codec._internal import jsonl_line  # deferred: importing reporting stays light

    results = report.results
    for index in range(len(results)):
        line = results.record_text(index) if isinstance(results, StoredResults) else None
        if line is None:
            result = results[index]
            nodeid, result_index = record_attribution(result)
            line = encode_record(result, index, pytest_nodeid=nodeid, result_index=result_index)
        yield jsonl_line(line).encode("utf-8")


class JsonlTraceSink(ReportFileSink):
    """Writes each report's results as canonical records to a new ``.jsonl`` file.

    The default name is ``traces_<UTC %Y-%m-%dT%H-%M-%S-mmm>.jsonl``; ``filename``
    picks a fixed name instead. Either way an existing file is never replaced: a taken
    name gets ``_<random uuid hex>`` before its extension. Each line reads back with
    :func:`rampart.codec._record.deserialize_record`. The file appears atomically;
    a result the codec rejects raises :class:`ReportError` and nothing is written.
    """

    suffix = ".jsonl"

    def __init__(self, *, output_dir: Path | str, filename: str | None = None) -> None:
        super().__init__(output_dir=output_dir)
        self._filename = check_optional_filename("JsonlTraceSink", "filename", filename)

    @property
    def filename(self) -> str | None:
        return self._filename

    def __repr__(self) -> str:
        return f"JsonlTraceSink(output_dir={str(self._output_dir)!r}, filename={self._filename!r})"

    def _name(self) -> tuple[str, str]:
        if self._filename is None:
            return f"traces_{_files.utc_timestamp()}", self.suffix
        name = Path(self._filename)
        return name.stem, name.suffix

    def _content(self, report: TestRunReport) -> _files.Content:
        return functools.partial(trace_chunks, report)
