"""``LLMPipeline``: an OpenAI-compatible model, through ``rampart.llm``, as an AgentDojo agent.

It is an AgentDojo ``BasePipelineElement``, so AgentDojo's own
``run_task_with_pipeline`` runs it on the pair's environment and tools and decides
utility and security exactly as for any pipeline. The tool loop runs in the pair's
worker thread (where ``AgentDojoAgent`` runs every pipeline): each model call is
awaited on the event loop with ``anyio.from_thread.run``, so it goes through the
``LLMClient``'s limiter (slots, learned rate, ``Retry-After``, retries) and cache,
and the event loop stays free while the thread waits; each tool runs in the thread
on AgentDojo's ``FunctionsRuntime``. A cancelled pair (a timeout) stops at the next
model call.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

import anyio.from_thread
from agentdojo.agent_pipeline.agent_pipeline import load_system_message
from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.functions_runtime import EmptyEnv, FunctionCall, FunctionsRuntime
from agentdojo.types import (
    ChatAssistantMessage,
    ChatMessage,
    ChatSystemMessage,
    ChatUserMessage,
    text_content_block_from_string,
)

from rampart._checks import check_int, check_optional_instance, check_text
from rampart.agentdojo.pipelines import _run_tool
from rampart.llm import as_client

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.core.llm import LLMConfig
    from rampart.llm import Completion, LLMClient

__all__ = ["LLMPipeline"]

_OWNER = "LLMPipeline"


def _tools(runtime: FunctionsRuntime) -> list[dict[str, Any]]:
    """The runtime's functions as OpenAI tool definitions (AgentDojo's JSON schemas)."""
    return [
        {
            "type": "function",
            "function": {
                "name": function.name,
                "description": function.description,
                "parameters": function.parameters.model_json_schema(),
            },
        }
        for function in runtime.functions.values()
    ]


class LLMPipeline(BasePipelineElement):  # type: ignore[misc]  # untyped base
    """An OpenAI-compatible model with AgentDojo's tools, through ``rampart.llm``.

    ``llm`` is an ``LLMConfig`` (its shared ``LLMClient``) or an ``LLMClient`` (your
    limiter settings: ``adaptive=True`` learns the endpoint's rate). ``name`` is what
    AgentDojo's ``important_instructions`` attack reads a model id from (a name from
    ``agentdojo.models.MODEL_NAMES``); ``system_message`` defaults to AgentDojo's;
    ``max_iterations`` bounds the model calls per pair; ``seed`` is sent with each call.
    It runs only in rampart's worker threads (``AgentDojoAgent``), not in AgentDojo's
    own (synchronous) runner.
    """

    def __init__(
        self,
        llm: LLMConfig | LLMClient,
        *,
        name: str = "local",
        system_message: str | None = None,
        max_iterations: int = 50,
        seed: int | None = None,
    ) -> None:
        self._client = as_client(llm, owner=_OWNER)
        self.name = check_text(_OWNER, "name", name)
        system_message = check_optional_instance(
            _OWNER, "system_message", system_message, str, expected="a str"
        )
        self._system = load_system_message(None) if system_message is None else system_message
        self._max_iterations = check_int(_OWNER, "max_iterations", max_iterations, minimum=1)
        self._seed = None if seed is None else check_int(_OWNER, "seed", seed)
        self._tools: dict[tuple[str, ...], list[dict[str, Any]]] = {}

    @property
    def client(self) -> LLMClient:
        return self._client

    def _complete(self, wire: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Completion:
        try:
            anyio.from_thread.check_cancelled()
        except anyio.NoEventLoopError:
            raise RuntimeError(
                f"{_OWNER} runs in rampart's worker threads (AgentDojoAgent.run or "
                "rampart scan agentdojo), not in AgentDojo's synchronous runner"
            ) from None
        call = functools.partial(self._client.complete, wire, tools=tools, seed=self._seed)
        return anyio.from_thread.run(call)

    def query(
        self,
        query: str,
        runtime: FunctionsRuntime,
        env: Any = EmptyEnv(),  # noqa: B008 - AgentDojo's own signature
        messages: Sequence[ChatMessage] = (),
        extra_args: dict[str, Any] | None = None,
    ) -> tuple[str, FunctionsRuntime, Any, Sequence[ChatMessage], dict[str, Any]]:
        names = tuple(runtime.functions)
        tools = self._tools.get(names)
        if tools is None:  # built once per suite (a JSON schema per function)
            tools = self._tools[names] = _tools(runtime)
        out: list[ChatMessage] = [
            *messages,
            ChatSystemMessage(
                role="system", content=[text_content_block_from_string(self._system)]
            ),
            ChatUserMessage(role="user", content=[text_content_block_from_string(query)]),
        ]
        wire: list[dict[str, Any]] = [
            {"role": "system", "content": self._system},
            {"role": "user", "content": query},
        ]
        for _ in range(self._max_iterations):
            completion = self._complete(wire, tools)
            calls = [
                FunctionCall(function=call.name, args=dict(call.arguments), id=call.id)
                for call in completion.tool_calls
            ]
            out.append(
                ChatAssistantMessage(
                    role="assistant",
                    content=[text_content_block_from_string(completion.text)],
                    tool_calls=calls or None,
                )
            )
            assistant: dict[str, Any] = {"role": "assistant", "content": completion.text or None}
            if not calls:
                return query, runtime, env, out, dict(extra_args or {})
            assistant["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _arguments(call.arguments)},
                }
                for call in completion.tool_calls
            ]
            wire.append(assistant)
            for call in calls:
                text, error = _run_tool(runtime, env, call, out)
                wire.append({"role": "tool", "tool_call_id": call.id, "content": error or text})
        raise RuntimeError(
            f"{_OWNER}: the model still asked for tools after {self._max_iterations} calls "
            "(max_iterations) without answering"
        )


def _arguments(arguments: dict[str, Any]) -> str:
    raw = arguments.get("_raw")
    if len(arguments) == 1 and isinstance(raw, str):
        return raw  # sent back as the model wrote it (it was not a JSON object)
    return json.dumps(arguments, separators=(",", ":"))
