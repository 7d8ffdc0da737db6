"""The pytest plugin ``rampart scan agentdojo`` loads (``-p rampart.agentdojo._scan_plugin``).

It builds the agent once per process (from ``--pipeline module:factory``, or
``--model`` at ``--base-url`` as an ``LLMPipeline``) and prints
AgentDojo's attack success rate and utility at the end of the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from rampart.agentdojo._agent import AgentDojoAgent
from rampart.agentdojo._scan_config import ScanConfig, build_pipeline
from rampart.agentdojo._summary import AgentDojoSummarySink

if TYPE_CHECKING:
    from rampart.reporting import ReportSink


_AGENT = pytest.StashKey[AgentDojoAgent]()


def pytest_configure(config: pytest.Config) -> None:
    """Check the scan (tasks, attack, the pipeline) before anything is collected."""
    scan = ScanConfig.from_env()
    try:
        if not scan.pairs():
            raise ValueError("the selection holds no pair")
        config.stash[_AGENT] = AgentDojoAgent(build_pipeline(scan), max_threads=scan.max_threads)
    except (ValueError, TypeError, ImportError) as error:
        raise pytest.UsageError(f"rampart scan agentdojo: {error}") from error


def pytest_rampart_sinks(config: pytest.Config) -> list[ReportSink]:
    return [AgentDojoSummarySink(config)]


@pytest.fixture(scope="session")
def agentdojo_scan(pytestconfig: pytest.Config) -> tuple[ScanConfig, AgentDojoAgent]:
    return ScanConfig.from_env(), pytestconfig.stash[_AGENT]
