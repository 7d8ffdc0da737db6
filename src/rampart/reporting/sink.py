"""Compatibility path (RAMPART's ``rampart.reporting.sink``): the sink protocol and the report.

``ReportSink``, ``TestRunReport`` and ``PopulationSummary`` live in ``rampart.reporting``.
"""

from rampart.reporting._report import PopulationSummary, TestRunReport
from rampart.reporting._sink import ReportSink

__all__ = ["PopulationSummary", "ReportSink", "TestRunReport"]
