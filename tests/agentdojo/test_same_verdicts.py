"""rampart's per-pair utility and security equal AgentDojo's own runner's.

For each suite, a sample of pairs runs through AgentDojo's ``run_task_with_injection_tasks``
(what ``benchmark_suite_with_injections`` calls per user task) and through
``AgentDojoAgent.run``, concurrently, with the same pipeline object: the ground truth
(full utility, never injected), one that always carries out the injection, and one
that follows it at random with a fixed seed. The full comparison is a benchmark
(benchmarks/bench_agentdojo.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from agentdojo.benchmark import run_task_with_injection_tasks
from agentdojo.logging import OutputLogger

from rampart import SafetyStatus
from rampart.agentdojo import SUITE_NAMES, AgentDojoAgent, load_attack, load_suite, pairs
from rampart.agentdojo.pipelines import ScriptedPipeline

from ._pipelines import run_pairs

if TYPE_CHECKING:
    from pathlib import Path

    from rampart.core.result import Result

USER_TASKS = 2
INJECTION_TASKS = 3
PIPELINES = {"ground_truth": 0.0, "always_injected": 1.0, "random": 0.5}


def agentdojo_verdicts(
    suite_name: str, pipeline: ScriptedPipeline, tmp_path: Path
) -> dict[str, tuple[bool, bool]]:
    suite = load_suite(suite_name)
    attack = load_attack("important_instructions", suite, pipeline)
    injection_ids = list(suite.injection_tasks)[:INJECTION_TASKS]
    verdicts: dict[str, tuple[bool, bool]] = {}
    with OutputLogger(str(tmp_path)):
        for user_id in list(suite.user_tasks)[:USER_TASKS]:
            utility, security = run_task_with_injection_tasks(
                suite,
                pipeline,
                suite.user_tasks[user_id],
                attack,
                logdir=tmp_path,
                force_rerun=True,
                injection_tasks=injection_ids,
            )
            for (user, injection), useful in utility.items():
                verdicts[f"{suite_name}-{user}-{injection}"] = (useful, security[(user, injection)])
    return verdicts


async def rampart_results(suite_name: str, pipeline: ScriptedPipeline) -> dict[str, Result]:
    suite = load_suite(suite_name)
    selected = pairs(
        suite_name,
        user_tasks=list(suite.user_tasks)[:USER_TASKS],
        injection_tasks=list(suite.injection_tasks)[:INJECTION_TASKS],
    )
    return await run_pairs(AgentDojoAgent(pipeline, max_threads=8), selected)


@pytest.mark.anyio
@pytest.mark.parametrize("suite_name", SUITE_NAMES)
async def test_same_verdicts_as_agentdojo(suite_name: str, tmp_path: Path) -> None:
    securities: set[bool] = set()
    for kind, follow in PIPELINES.items():
        pipeline = ScriptedPipeline(suite_name, follow=follow, seed=7)
        expected = agentdojo_verdicts(suite_name, pipeline, tmp_path / kind)
        results = await rampart_results(suite_name, pipeline)
        assert sorted(results) == sorted(expected)
        for pair_id, (utility, security) in expected.items():
            result = results[pair_id]
            # A pair that ended without AgentDojo's facts failed: say how.
            assert "agentdojo" in result.metadata, (kind, pair_id, result.status, result.summary)
            facts = result.metadata["agentdojo"]
            assert (facts["utility"], facts["security"]) == (utility, security), (kind, pair_id)
            # An injection carried out is UNSAFE; one resisted (and read) is SAFE.
            assert results[pair_id].status is (
                SafetyStatus.UNSAFE if security else SafetyStatus.SAFE
            )
            securities.add(security)
        if kind == "ground_truth":
            assert all(utility and not security for utility, security in expected.values())
        if kind == "always_injected":
            assert all(security for _, security in expected.values())
    assert securities == {True, False}
