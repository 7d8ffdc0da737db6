"""The pytest plugin ``rampart scan agentdojo`` loads (``-p rampart.scan._agentdojo_plugin``).

It builds the agent once per run (from ``--pipeline module:factory``, or
``--model`` at ``--base-url`` as an ``LLMPipeline``) and prints
AgentDojo's attack success rate and utility at the end of the run.

A pair that ``--timeout`` ended leaves its pipeline's thread behind (a thread cannot
be stopped from outside), which keeps the interpreter from exiting: once everything is
reported, the command ends its process at once (``rampart.scan._end_if_threads_left``),
and so does each ``-n`` worker here, instead of waiting for the pipeline.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

import pytest

from rampart.agentdojo._internal import AgentDojoAgent, AgentDojoSummarySink
from rampart.scan import _end_if_threads_left
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
    # AgentDojo's import leaves a large heap that lives as long as the process (every
    # model SDK's classes); each full collection of the run (and pytest's at its end)
    # would walk it again: about a quarter of a small scan's CPU. Frozen, the collector
    # leaves it out (``gc.freeze``, meant for such long-lived objects).
    gc.freeze()


def pytest_rampart_sinks(config: pytest.Config) -> list[ReportSink]:
    return [AgentDojoSummarySink(config)]


@pytest.fixture(scope="session")
def agentdojo_scan(pytestconfig: pytest.Config) -> tuple[ScanConfig, AgentDojoAgent]:
    return ScanConfig.from_env(), pytestconfig.stash[_AGENT]


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_SESSION] = session


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """An ``-n`` worker's process ends now if a pipeline's thread is still running (see
    above; the command, running the controller, does the same for its own)."""
    session = config.stash.get(_SESSION, None)
    if session is not None and hasattr(config, "workerinput"):
        _end_if_threads_left(int(session.exitstatus), "rampart scan agentdojo (worker)")
