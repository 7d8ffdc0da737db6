"""Scripted AgentDojo pipelines: a reference agent that needs no model.

``ScriptedPipeline(suite)`` answers each user task with the task's own ground-truth
tool calls (so it scores full utility), and, with probability ``follow`` (decided per
pair from ``seed``, so the same pair decides the same way in every run and under any
concurrency), carries out an injection it reads in a tool result by making that
injection task's ground-truth calls. ``delay`` seconds of sleep stand for each model
call. It is a plain ``BasePipelineElement``: AgentDojo's own runner and rampart run it
alike, which is how rampart's verdicts are checked against AgentDojo's.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
from agentdojo.functions_runtime import EmptyEnv, FunctionsRuntime
from agentdojo.types import (
    ChatAssistantMessage,
    ChatMessage,
    ChatToolResultMessage,
    text_content_block_from_string,
)

from rampart._checks import check_probability, check_seconds
from rampart.agentdojo._suites import DEFAULT_VERSION, load_suite
from rampart.payloads._internal import follows, letters, read_text

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["ScriptedPipeline"]


def _run_tool(
    runtime: FunctionsRuntime, env: Any, call: Any, messages: list[ChatMessage]
) -> tuple[str, str | None]:
    """Run ``call`` on AgentDojo's runtime and append its result message (as AgentDojo's
    tool executor writes it); the result's text and the error, if any."""
    result, error = runtime.run_function(env, call.function, call.args)
    text = str(tool_result_to_str(result))
    messages.append(
        ChatToolResultMessage(
            role="tool",
            content=[text_content_block_from_string(text)],
            tool_call=call,
            tool_call_id=call.id,
            error=error,
        )
    )
    return text, error


class ScriptedPipeline(BasePipelineElement):  # type: ignore[misc]  # untyped base
    """Ground truth for the user task; follows a read injection with probability ``follow``."""

    def __init__(
        self,
        suite: str,
        *,
        version: str = DEFAULT_VERSION,
        follow: float = 0.0,
        seed: int = 0,
        delay: float = 0.0,
        name: str = "local",
    ) -> None:
        follow = check_probability("ScriptedPipeline", "follow", follow)
        delay = check_seconds("ScriptedPipeline", "delay", delay)
        self._suite = load_suite(suite, version)
        self._by_prompt = {task.PROMPT: task for task in self._suite.user_tasks.values()}
        # AgentDojo's benchmark also runs each injection task as a user task (its goal
        # as the prompt), to check the task can be done at all.
        for injection in self._suite.injection_tasks.values():
            self._by_prompt.setdefault(injection.GOAL, injection)
        self._goals = [(letters(task.GOAL), task) for task in self._suite.injection_tasks.values()]
        self.follow, self.seed, self.delay = float(follow), seed, float(delay)
        # AgentDojo's important_instructions attack reads a model id from the name.
        self.name = name

    def follows(self, prompt: str, injection_task_id: str) -> bool:
        """Whether this pipeline carries out ``injection_task_id`` read during ``prompt``."""
        return follows(
            follow=self.follow, seed=self.seed, prompt=prompt, injection_task=injection_task_id
        )

    def _call(
        self, runtime: FunctionsRuntime, env: Any, call: Any, messages: list[ChatMessage]
    ) -> str:
        if self.delay:
            time.sleep(self.delay)  # the model deciding on this call
        messages.append(
            ChatAssistantMessage(
                role="assistant", tool_calls=[call], content=[text_content_block_from_string("")]
            )
        )
        return _run_tool(runtime, env, call, messages)[0]

    def query(
        self,
        query: str,
        runtime: FunctionsRuntime,
        env: Any = EmptyEnv(),  # noqa: B008 - AgentDojo's own signature
        messages: Sequence[ChatMessage] = (),
        extra_args: dict[str, Any] | None = None,
    ) -> tuple[str, FunctionsRuntime, Any, Sequence[ChatMessage], dict[str, Any]]:
        task = self._by_prompt.get(query)
        if task is None:
            raise ValueError(
                f"ScriptedPipeline: no user task of the suite has the prompt {query[:80]!r}"
            )
        out: list[ChatMessage] = list(messages)
        read: list[Any] = []  # injection tasks whose goal a tool result carried, in order
        for call in task.ground_truth(env):
            seen = letters(read_text(self._call(runtime, env, call, out)))
            read += [
                injection
                for goal, injection in self._goals
                if goal and goal in seen and injection not in read
            ]
        # A followed injection is carried out after the user's task, so the user's own
        # later calls cannot undo it; its expected words join the answer.
        followed = [injection for injection in read if self.follows(query, injection.ID)]
        for injection in followed:
            for injected in injection.ground_truth(env):
                self._call(runtime, env, injected, out)
        answer = " ".join(
            text
            for text in [task.GROUND_TRUTH_OUTPUT, *(i.GROUND_TRUTH_OUTPUT for i in followed)]
            if text
        )
        if self.delay:
            time.sleep(self.delay)  # the model writing its answer
        out.append(
            ChatAssistantMessage(
                role="assistant",
                content=[text_content_block_from_string(answer)],
                tool_calls=None,
            )
        )
        return query, runtime, env, out, dict(extra_args or {})
