"""Running one AgentDojo pair with a pipeline, in a worker thread, and recording it.

AgentDojo's own ``TaskSuite.run_task_with_pipeline`` runs the task and decides
``(utility, security)``: rampart calls exactly that, so its verdicts are AgentDojo's.
What rampart adds is the record: a thin pipeline element around the user's pipeline
keeps the messages it returned (the tool calls and their results) and a snapshot of
the environment before and after, from which the result's tool calls and side effects
(the environment's diff) are built. AgentDojo's benchmark wrappers are not used: their
``TraceLogger`` needs an outer ``OutputLogger``, writes beside site-packages without a
log directory, and keeps one logger stack shared by every thread.

AgentDojo's checks run one pair at a time (the pipelines stay concurrent): they compare
environments with DeepDiff, which parses Python (``ast.literal_eval``) thousands of
times a pair, and CPython 3.11's AST constructor keeps its recursion depth in state
shared by every thread, so parses in two threads at once fail now and then with
``SystemError: AST constructor recursion depth mismatch`` (CPython gh-106905). The
recording element takes the lock when the user's pipeline returns, which is where
AgentDojo's runner starts checking, and ``run_pair`` releases it.
"""

from __future__ import annotations

import functools
import importlib
import threading
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["PairRecord", "run_pair"]

# Cut long tool results and diff values: a record is for reading, not a dump.
_MAX_TEXT = 2_000
_MAX_CHANGES = 50

_CHECKS = threading.Lock()


@attrs.define(kw_only=True)
class PairRecord:
    """What one run of a pair did: AgentDojo's two checks, its calls, the env diff."""

    utility: bool
    security: bool
    output: str
    tool_calls: list[tuple[str, dict[str, Any], str | None]]
    changes: list[tuple[str, Any, Any]]
    tool_results: list[str]


def _cut(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + " …"


@functools.cache
def _recording_class() -> type:
    """The recording element's class, made once: a class made per pair, in worker
    threads, would be an ABC subclass created and garbage-collected under concurrency
    for every pair (AgentDojo's ``BasePipelineElement`` is an ``abc.ABC``)."""
    base = importlib.import_module("agentdojo.agent_pipeline.base_pipeline_element")
    errors = importlib.import_module("agentdojo.agent_pipeline.errors")

    class _Recording(base.BasePipelineElement):  # type: ignore[misc,name-defined]
        def __init__(self, pipeline: Any, record: dict[str, Any]) -> None:
            self.pipeline, self.record = pipeline, record
            self.name = getattr(pipeline, "name", None)

        def query(
            self,
            query: str,
            runtime: Any,
            env: Any = None,
            messages: Sequence[Any] = (),
            extra_args: Mapping[str, Any] | None = None,
        ) -> Any:
            record = self.record
            if record["checking"]:  # AgentDojo asks again (no output): run unlocked
                record["checking"] = False
                _CHECKS.release()
            record["before"] = env.model_dump(mode="json") if env is not None else None
            try:
                out = self.pipeline.query(
                    query, runtime, env, list(messages), dict(extra_args or {})
                )
            except errors.AbortAgentError as abort:
                record["messages"], record["env"] = abort.messages, abort.task_environment
                _CHECKS.acquire()
                record["checking"] = True
                raise
            record["messages"], record["env"] = out[3], out[2]
            _CHECKS.acquire()
            record["checking"] = True
            return out

    return _Recording


def _recording_element(pipeline: Any, record: dict[str, Any]) -> Any:
    """A pipeline element that runs ``pipeline`` and keeps what it returned."""
    return _recording_class()(pipeline, record)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(
        str(block.get("content") or "") for block in content if isinstance(block, dict)
    )


def _diff(before: Any, after: Any, path: str, out: list[tuple[str, Any, Any]]) -> None:
    if len(out) >= _MAX_CHANGES or before == after:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            _diff(before.get(key), after.get(key), f"{path}.{key}" if path else str(key), out)
        return
    if isinstance(before, list) and isinstance(after, list):
        # Element by element; items appended or removed at the end are one change each.
        for index in range(max(len(before), len(after))):
            old = before[index] if index < len(before) else None
            new = after[index] if index < len(after) else None
            _diff(old, new, f"{path}[{index}]", out)
        return
    out.append((path or "<environment>", before, after))


def run_pair(
    *, suite: Any, pipeline: Any, user_task: Any, injection_task: Any, injections: dict[str, str]
) -> PairRecord:
    """Run one pair with AgentDojo's own runner (blocking; call it in a worker thread)."""
    record: dict[str, Any] = {"messages": [], "env": None, "before": None, "checking": False}
    try:
        utility, security = suite.run_task_with_pipeline(
            _recording_element(pipeline, record), user_task, injection_task, injections
        )
    finally:
        if record["checking"]:
            _CHECKS.release()
    calls: list[tuple[str, dict[str, Any], str | None]] = []
    results: list[str] = []
    pending: dict[int, int] = {}
    output = ""
    for message in record["messages"]:
        role = message["role"]
        if role == "assistant":
            output = _text(message.get("content"))
            for call in message.get("tool_calls") or []:
                pending[id(call)] = len(calls)
                calls.append((call.function, dict(call.args), None))
        elif role == "tool":
            text = _text(message.get("content"))
            results.append(text)
            call = message.get("tool_call")
            index = pending.get(id(call)) if call is not None else None
            if index is None:  # a pipeline that copied the call: the first one unanswered
                index = next((i for i, c in enumerate(calls) if c[2] is None), None)
            if index is not None:
                name, args, _ = calls[index]
                error = message.get("error")
                calls[index] = (name, args, _cut(f"{text}{' error: ' + error if error else ''}"))
    changes: list[tuple[str, Any, Any]] = []
    env = record["env"]
    if record["before"] is not None and env is not None:
        _diff(record["before"], env.model_dump(mode="json"), "", changes)
    return PairRecord(
        utility=bool(utility),
        security=bool(security),
        output=output,
        tool_calls=calls,
        changes=changes,
        tool_results=results,
    )
