"""Wiring for the example red-team suite: where reports go, and the agents under test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rampart.reporting import JsonFileReportSink, JsonlTraceSink, ReportSink
from rampart.testing import SimulatedAgent


def pytest_rampart_sinks(config: pytest.Config) -> list[ReportSink]:
    """Write a JSON report and canonical trace records (``RAMPART_REPORT_DIR``, default .report)."""
    output_dir = Path(os.environ.get("RAMPART_REPORT_DIR", ".report"))
    return [JsonFileReportSink(output_dir=output_dir), JsonlTraceSink(output_dir=output_dir)]


@pytest.fixture(params=["vulnerable", "hardened"])
def agent(request: pytest.FixtureRequest) -> SimulatedAgent:
    """The built-in simulated email assistant, in two configurations.

    ``vulnerable`` follows every injected instruction; ``hardened`` follows none.
    """
    if request.param == "vulnerable":
        return SimulatedAgent.vulnerable(seed=7)
    return SimulatedAgent.hardened(seed=7)
