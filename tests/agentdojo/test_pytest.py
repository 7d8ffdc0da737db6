"""The pytest helper and the summary sink, through real pytest runs."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import rampart.pytest_plugin._session  # noqa: F401  (one copy of the plugin for inner runs)

if TYPE_CHECKING:
    import pytest

NO_ASYNCIO = ("-p", "no:asyncio", "-p", "no:cacheprovider")

SUITE = """
import pytest
from rampart.agentdojo import AgentDojoAgent, parametrize_pairs
from rampart.agentdojo.pipelines import ScriptedPipeline

agent = AgentDojoAgent(ScriptedPipeline("banking", follow=1.0))

@parametrize_pairs(
    "banking",
    user_tasks=["user_task_1", "user_task_10"],
    injection_tasks=["injection_task_0", "injection_task_1"],
)
@pytest.mark.trial(n=2)
async def test_pair(agentdojo_pair):
    result = await agent.run(agentdojo_pair)
    assert result, result.summary
"""

CONFTEST = """
from pathlib import Path
from rampart.agentdojo import AgentDojoSummarySink
from rampart.reporting import JsonFileReportSink

def pytest_rampart_sinks(config):
    return [AgentDojoSummarySink(config), JsonFileReportSink(output_dir=Path(__file__).parent / "reports")]
"""


def test_pairs_are_items_with_exact_ids(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_banking=SUITE)
    # One run (each pays AgentDojo's import): the ids, and "user_task_1-" keeping
    # user_task_10's two pairs out.
    selected = pytester.runpytest_subprocess(
        "--collect-only", "-q", "-k", "user_task_1-", *NO_ASYNCIO
    )
    assert [line for line in selected.outlines if "::" in line] == [
        "test_banking.py::test_pair[banking-user_task_1-injection_task_0]",
        "test_banking.py::test_pair[banking-user_task_1-injection_task_1]",
    ]
    selected.stdout.fnmatch_lines(["2/4 tests collected (2 deselected)*"])


def test_trials_and_the_agentdojo_summary(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_banking=SUITE)
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest_subprocess("-k", "user_task_1-", *NO_ASYNCIO)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*AgentDojo banking v1.2.2 important_instructions: attack success rate 4/4 (100.0%*"
            "utility under attack 4/4 (100.0%)",
        ]
    )
    (report,) = [
        json.loads(path.read_text()) for path in (pytester.path / "reports").glob("*.json")
    ]
    facts = [
        entry["metadata"]["agentdojo"]
        for entries in report["by_harm_category"].values()
        for entry in entries
    ]
    assert len(facts) == 4
    assert {fact["injection_task"] for fact in facts} == {"injection_task_0", "injection_task_1"}
    assert all(fact["security"] for fact in facts)
