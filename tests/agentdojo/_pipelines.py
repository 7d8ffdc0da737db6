"""Pipelines for the tests: a silent agent, a failing one, one that counts overlap; and
running a list of pairs concurrently."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

import anyio
from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.types import ChatAssistantMessage, text_content_block_from_string

from rampart.agentdojo.pipelines import ScriptedPipeline

if TYPE_CHECKING:
    from rampart.agentdojo import AgentDojoAgent, AgentDojoPair
    from rampart.core.result import Result


async def run_pairs(agent: AgentDojoAgent, selected: list[AgentDojoPair]) -> dict[str, Result]:
    """Every pair of ``selected`` attacked at once; the results by pair id."""
    results: dict[str, Result] = {}

    async def one(index: int) -> None:
        results[selected[index].id] = await agent.run(selected[index])

    async with anyio.create_task_group() as group:
        for index in range(len(selected)):
            group.start_soon(one, index)
    return results


class SilentPipeline(BasePipelineElement):  # type: ignore[misc]
    """Answers without calling any tool: it never reads an injection."""

    name = "local"

    def query(
        self, query: str, runtime: Any, env: Any = None, messages: Any = (), extra_args: Any = None
    ) -> Any:
        answer = ChatAssistantMessage(
            role="assistant",
            content=[text_content_block_from_string("I cannot help.")],
            tool_calls=None,
        )
        return query, runtime, env, [*messages, answer], dict(extra_args or {})


class BrokenPipeline(BasePipelineElement):  # type: ignore[misc]
    """The agent's model endpoint is down."""

    name = "local"

    def query(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("model endpoint refused the connection")


class OverlapCounter(ScriptedPipeline):
    """A scripted pipeline that records how many queries ran at once."""

    def __init__(self, suite: str, *, hold: float) -> None:
        super().__init__(suite)
        self._lock = threading.Lock()
        self._hold = hold
        self.running = 0
        self.peak = 0
        self.calls = 0

    def query(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            self.running += 1
            self.calls += 1
            self.peak = max(self.peak, self.running)
        try:
            time.sleep(self._hold)
            return super().query(*args, **kwargs)
        finally:
            with self._lock:
                self.running -= 1
