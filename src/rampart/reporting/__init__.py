"""Report sinks and the run report they receive.

``TestRunReport`` is what a pytest session produced; a ``ReportSink`` receives it once
at the end. Four sinks ship: ``JsonFileReportSink`` (a flat, timestamped JSON report),
``JsonlTraceSink`` (canonical ``rampart.trace`` records, one per line),
``HtmlReportSink`` (one self-contained page for people) and ``SarifReportSink`` (a
SARIF 2.1.0 log for code-scanning UIs). All are projections of the
canonical codec in ``rampart.codec._record``. The terminal safety summary
(``_terminal``), which the pytest plugin prints and ``rampart report`` re-renders from
saved runs, is one more projection of the same data.
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.reporting._errors import ReportError
    from rampart.reporting._html import HtmlReportSink
    from rampart.reporting._json_report import JsonFileReportSink
    from rampart.reporting._jsonl import JsonlTraceSink
    from rampart.reporting._report import PopulationSummary, TestRunReport
    from rampart.reporting._run_data import GroupInterval, RunInfo, StatusCounts, TrialGroupSummary
    from rampart.reporting._sarif import SarifReportSink
    from rampart.reporting._sink import ReportSink
    from rampart.reporting._stored import StoredResults

# Loaded on first access: the plugin imports this package at pytest start, and a run
# that writes no report needs none of the sinks (``docs/architecture.md``).
_LAZY = {
    "GroupInterval": "rampart.reporting._run_data",
    "HtmlReportSink": "rampart.reporting._html",
    "JsonFileReportSink": "rampart.reporting._json_report",
    "JsonlTraceSink": "rampart.reporting._jsonl",
    "PopulationSummary": "rampart.reporting._report",
    "ReportError": "rampart.reporting._errors",
    "ReportSink": "rampart.reporting._sink",
    "RunInfo": "rampart.reporting._run_data",
    "SarifReportSink": "rampart.reporting._sarif",
    "StatusCounts": "rampart.reporting._run_data",
    "StoredResults": "rampart.reporting._stored",
    "TestRunReport": "rampart.reporting._report",
    "TrialGroupSummary": "rampart.reporting._run_data",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY)

__all__ = [
    "GroupInterval",
    "HtmlReportSink",
    "JsonFileReportSink",
    "JsonlTraceSink",
    "PopulationSummary",
    "ReportError",
    "ReportSink",
    "RunInfo",
    "SarifReportSink",
    "StatusCounts",
    "StoredResults",
    "TestRunReport",
    "TrialGroupSummary",
]
