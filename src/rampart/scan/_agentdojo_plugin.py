"""The pytest plugin ``rampart scan agentdojo`` loads (``-p rampart.scan._agentdojo_plugin``).

It builds the agent once per process (from ``--pipeline module:factory``, or
``--model`` at ``--base-url`` as an ``LLMPipeline``) and prints
AgentDojo's attack success rate and utility at the end of the run.

A pair that ``--timeout`` ended leaves its pipeline's thread behind (a thread cannot
be stopped from outside), and on asyncio worker threads keep the interpreter from
exiting: once everything is reported, the scan's process (its own, started by the
command) then ends at once with its exit status instead of waiting for the pipeline.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING

import pytest

from rampart.agentdojo._agent import AgentDojoAgent
from rampart.agentdojo._summary import AgentDojoSummarySink
from rampart.scan._agentdojo_config import ScanConfig, build_pipeline
from rampart.scan._handover import register_marker

if TYPE_CHECKING:
    from rampart.reporting import ReportSink


_AGENT = pytest.StashKey[AgentDojoAgent]()
_SESSION = pytest.StashKey[pytest.Session]()


def pytest_configure(config: pytest.Config) -> None:
    """Check the scan (tasks, attack, the pipeline) before anything is collected."""
    register_marker(config)
    try:
        scan = ScanConfig.from_env()
        if not scan.pairs():
            raise ValueError("the selection holds no pair")
        config.stash[_AGENT] = AgentDojoAgent(build_pipeline(scan), max_threads=scan.max_threads)
    except (ValueError, TypeError, ImportError, RuntimeError) as error:
        raise pytest.UsageError(f"rampart scan agentdojo: {error}") from error


def pytest_rampart_sinks(config: pytest.Config) -> list[ReportSink]:
    return [AgentDojoSummarySink(config)]


@pytest.fixture(scope="session")
def agentdojo_scan(pytestconfig: pytest.Config) -> tuple[ScanConfig, AgentDojoAgent]:
    return ScanConfig.from_env(), pytestconfig.stash[_AGENT]


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_SESSION] = session


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """End the process now if a pipeline's thread is still running (see above)."""
    stuck = [
        thread
        for thread in threading.enumerate()
        if thread is not threading.current_thread() and thread.is_alive() and not thread.daemon
    ]
    session = config.stash.get(_SESSION, None)
    if not stuck or session is None:
        return
    sys.stderr.write(
        f"rampart scan agentdojo: {len(stuck)} thread(s) still running at the end (a "
        "pipeline a timeout left behind, or one it started); ending the scan's process "
        "without waiting for them\n"
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(session.exitstatus))
