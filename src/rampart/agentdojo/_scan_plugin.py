"""The pytest plugin ``rampart scan agentdojo`` loads (``-p rampart.agentdojo._scan_plugin``).

It builds the agent once per process from ``--pipeline module:factory`` and prints
AgentDojo's attack success rate and utility at the end of the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from rampart.agentdojo._agent import AgentDojoAgent
from rampart.agentdojo._scan_config import ScanConfig, load_factory
from rampart.agentdojo._summary import AgentDojoSummarySink

if TYPE_CHECKING:
    from rampart.reporting import ReportSink


def pytest_rampart_sinks(config: pytest.Config) -> list[ReportSink]:
    return [AgentDojoSummarySink(config)]


@pytest.fixture(scope="session")
def agentdojo_scan() -> tuple[ScanConfig, AgentDojoAgent]:
    config = ScanConfig.from_env()
    return config, AgentDojoAgent(load_factory(config.pipeline), max_threads=config.max_threads)
