"""Report sinks and the run report they receive.

``TestRunReport`` is what a pytest session produced; a ``ReportSink`` receives it once
at the end. Three sinks ship: ``JsonFileReportSink`` (a flat, timestamped JSON report),
``JsonlTraceSink`` (canonical ``rampart.trace`` records, one per line) and
``HtmlReportSink`` (one self-contained page for people). All are projections of the
canonical codec in ``rampart.codec._record``. The terminal safety summary
(``_terminal``), which the pytest plugin prints and ``rampart report`` re-renders from
saved runs, is one more projection of the same data.
"""

from rampart.reporting._errors import ReportError
from rampart.reporting._html import HtmlReportSink
from rampart.reporting._json_report import JsonFileReportSink
from rampart.reporting._jsonl import JsonlTraceSink
from rampart.reporting._report import PopulationSummary, TestRunReport
from rampart.reporting._run_data import GroupInterval, RunInfo, StatusCounts, TrialGroupSummary
from rampart.reporting._sink import ReportSink
from rampart.reporting._stored import StoredResults

__all__ = [
    "GroupInterval",
    "HtmlReportSink",
    "JsonFileReportSink",
    "JsonlTraceSink",
    "PopulationSummary",
    "ReportError",
    "ReportSink",
    "RunInfo",
    "StatusCounts",
    "StoredResults",
    "TestRunReport",
    "TrialGroupSummary",
]
