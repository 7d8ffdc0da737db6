"""Compatibility path (RAMPART's ``rampart.reporting.json_file``): ``JsonFileReportSink``."""

from rampart.reporting._json_report import JsonFileReportSink

__all__ = ["JsonFileReportSink"]
