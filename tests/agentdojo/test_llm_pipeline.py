"""Path (a): an OpenAI-compatible model, through ``rampart.llm``, as the agent of AgentDojo
pairs, end to end against the test server's simulated tool-calling model."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from rampart import SafetyStatus
from rampart.agentdojo import AgentDojoAgent, LLMPipeline, pairs
from rampart.agentdojo.pipelines import ScriptedPipeline
from rampart.core.llm import LLMConfig
from rampart.limits import new_run
from rampart.llm import LLMClient, ResponseCache
from rampart.testing.server import serve

from ._pipelines import run_pairs

if TYPE_CHECKING:
    from pathlib import Path

    from rampart.core.result import Result

# user_task_7's ground truth names a channel called after its injection: the model
# must read what was planted back from the tool results to do the task.
SAMPLE = {
    "user_tasks": ["user_task_2", "user_task_7"],
    "injection_tasks": ["injection_task_1", "injection_task_3", "injection_task_5"],
}


async def run_all(agent: AgentDojoAgent) -> dict[str, Result]:
    return await run_pairs(agent, pairs("slack", **SAMPLE))


def facts(results: dict[str, Result]) -> dict[str, tuple[SafetyStatus, bool, bool]]:
    verdicts = {}
    for pair_id, result in results.items():
        found = result.metadata.get("agentdojo")
        assert found is not None, (pair_id, result.status, result.summary)
        verdicts[pair_id] = (result.status, found["utility"], found["security"])
    return verdicts


@pytest.mark.anyio
async def test_same_verdicts_as_the_scripted_pipeline() -> None:
    async with serve() as server:
        llm = LLMConfig(model="sim-agentdojo:follow=0.5,seed=7", endpoint=server.url)
        over_http = await run_all(
            AgentDojoAgent(LLMPipeline(LLMClient(llm, cache=False)), max_threads=6)
        )
        calls = server.app.statistics().model_requests
    in_threads = await run_all(
        AgentDojoAgent(ScriptedPipeline("slack", follow=0.5, seed=7), max_threads=6)
    )
    assert facts(over_http) == facts(in_threads)
    statuses = {status for status, _, _ in facts(over_http).values()}
    assert statuses == {SafetyStatus.SAFE, SafetyStatus.UNSAFE}
    assert all(utility for _, utility, _ in facts(over_http).values())
    # One model call per tool call and one per answer, all through the HTTP model.
    tool_calls = sum(len(result.turns[0].response.tool_calls) for result in over_http.values())
    assert calls == tool_calls + len(over_http)


@pytest.mark.anyio
async def test_rate_limited_answers_are_retried_without_error(tmp_path: Path) -> None:
    async with serve(rate=12.0, burst=1) as server:
        llm = LLMConfig(model="sim-agentdojo:follow=1", endpoint=server.url)
        client = LLMClient(llm, adaptive=True, cache=ResponseCache(tmp_path))
        results = await run_all(AgentDojoAgent(LLMPipeline(client), max_threads=6))
        stats = server.app.statistics()
    assert stats.rate_limited > 0  # six pairs started at once against a burst of one
    assert {status for status, _, security in facts(results).values()} == {SafetyStatus.UNSAFE}
    # A second run (its own limiters: a name is one limiter per run) is answered from
    # the cache, tool calls and all (only the final answers, empty in these tasks, are
    # asked again: an empty reply is never cached).
    with new_run():
        async with serve() as server:
            client = LLMClient(
                LLMConfig(model=llm.model, endpoint=server.url), cache=ResponseCache(tmp_path)
            )
            again = await run_all(AgentDojoAgent(LLMPipeline(client), max_threads=6))
            assert server.app.statistics().requests == len(results)
    assert facts(again) == facts(results)


def test_outside_a_worker_thread_it_says_where_it_runs() -> None:
    pipeline = LLMPipeline(LLMConfig(model="m", endpoint="http://127.0.0.1:9/v1"))
    with pytest.raises(RuntimeError, match="runs in rampart's worker threads"):
        pipeline.query("hello", runtime=_Runtime())


def test_bad_settings_name_the_field() -> None:
    llm = LLMConfig(model="m", endpoint="http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="max_iterations"):
        LLMPipeline(llm, max_iterations=0)
    with pytest.raises(TypeError, match="llm"):
        LLMPipeline("gpt-4o")  # type: ignore[arg-type]


class _Runtime:
    functions: dict[str, object] = {}
