"""Report sinks and the run report they receive.

``TestRunReport`` is what a pytest session produced; a ``ReportSink`` receives it once
at the end. Two sinks ship: ``JsonFileReportSink`` (a flat, timestamped JSON report)
and ``JsonlTraceSink`` (canonical ``rampart.trace`` records, one per line). Both are
projections of the canonical codec in ``rampart.codec._record``.
"""

from rampart.reporting._errors import ReportError
from rampart.reporting._json_report import JsonFileReportSink
from rampart.reporting._jsonl import JsonlTraceSink
from rampart.reporting._report import PopulationSummary, TestRunReport
from rampart.reporting._sink import ReportSink
from rampart.reporting._stored import StoredResults

__all__ = [
    "JsonFileReportSink",
    "JsonlTraceSink",
    "PopulationSummary",
    "ReportError",
    "ReportSink",
    "StoredResults",
    "TestRunReport",
]
