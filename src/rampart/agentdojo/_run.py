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

The pipeline is the agent under test, so what it returned is input: messages of any
shape, tool-call arguments that are not JSON, answers and tool results of any size.
The record is built from it without ever failing once AgentDojo has decided (its
verdict is the finding; a record that cannot be read whole is kept in part, with a
note), and it is bounded: texts are cut (``_MAX_TEXT``, ``_MAX_OUTPUT``), arguments and
diff values made JSON values of bounded depth, and the text the delivery check reads
(``seen``: letters only, from at most ``_MAX_READ`` characters of each tool result)
is computed here, in the worker thread, not on the event loop.
"""

from __future__ import annotations

import functools
import importlib
import math
import threading
from typing import TYPE_CHECKING, Any

import attrs

from rampart._text import one_line
from rampart.payloads._internal import letters, read_text

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["PairRecord", "run_pair"]

# Cut long tool results and diff values: a record is for reading, not a dump.
_MAX_TEXT = 2_000
_MAX_CHANGES = 50
_MAX_OUTPUT = 100_000
"""Characters of the agent's final answer kept in the response."""
_MAX_READ = 256 * 1024
"""Characters of each tool result the delivery check reads (an injection planted
further into a larger result counts as not delivered: never evidence of safety)."""
_MAX_DEPTH = 32
"""Nesting kept of tool-call arguments and of the environment's diff."""

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
    seen: str = ""  # the letters of what the tool results carried (the delivery check)
    note: str | None = None  # why part of the record is missing


def _cut(text: str, limit: int = _MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + " …"


def _shown(value: object) -> str:
    try:
        return _cut(repr(value))
    except Exception:
        return f"<unprintable {type(value).__name__}>"


def _json_value(value: object, depth: int = 0) -> Any:
    """``value`` as a JSON value (what a trace can record): other objects as their
    ``repr``, texts cut, nesting kept to ``_MAX_DEPTH``."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return _cut(value)
    if depth >= _MAX_DEPTH:
        return _shown(value)
    if isinstance(value, dict):
        return {str(key): _json_value(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(item, depth + 1) for item in value]
    return _shown(value)


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
    """A message's content as text, whatever the pipeline put there."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return "\n".join(
            _text(block.get("content")) if isinstance(block, dict) else _text(block)
            for block in content
        )
    return _shown(content)


def _diff(
    before: Any, after: Any, path: str, out: list[tuple[str, Any, Any]], depth: int = 0
) -> None:
    if len(out) >= _MAX_CHANGES or before == after:
        return
    if depth < _MAX_DEPTH and isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            where = f"{path}.{key}" if path else str(key)
            _diff(before.get(key), after.get(key), where, out, depth + 1)
        return
    if depth < _MAX_DEPTH and isinstance(before, list) and isinstance(after, list):
        # Element by element; items appended or removed at the end are one change each.
        for index in range(max(len(before), len(after))):
            old = before[index] if index < len(before) else None
            new = after[index] if index < len(after) else None
            _diff(old, new, f"{path}[{index}]", out, depth + 1)
        return
    out.append((_cut(path) or "<environment>", _json_value(before), _json_value(after)))


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
    try:
        return _record(bool(utility), bool(security), record)
    except Exception as error:
        # AgentDojo has decided: its verdict stands, whatever the record could not hold.
        return PairRecord(
            utility=bool(utility),
            security=bool(security),
            output="",
            tool_calls=[],
            changes=[],
            tool_results=[],
            note=f"the run's record could not be read: {type(error).__name__}: "
            f"{one_line(_shown(error), limit=300)}",
        )


def _record(utility: bool, security: bool, record: dict[str, Any]) -> PairRecord:
    """What the pipeline returned, as a bounded record (see the module docstring)."""
    calls: list[tuple[str, dict[str, Any], str | None]] = []
    results: list[str] = []
    pending: dict[int, int] = {}
    output = ""
    messages = record["messages"]
    for message in messages if isinstance(messages, list | tuple) else ():
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            output = _text(message.get("content"))
            tool_calls = message.get("tool_calls")
            for call in tool_calls if isinstance(tool_calls, list | tuple) else ():
                pending[id(call)] = len(calls)
                args = getattr(call, "args", None)
                arguments = _json_value(args) if isinstance(args, dict) else {}
                calls.append((_cut(str(getattr(call, "function", "?"))), arguments, None))
        elif role == "tool":
            text = _text(message.get("content"))
            results.append(text[:_MAX_READ])
            call = message.get("tool_call")
            index = pending.get(id(call)) if call is not None else None
            if index is None:  # a pipeline that copied the call: the first one unanswered
                index = next((i for i, c in enumerate(calls) if c[2] is None), None)
            if index is not None:
                name, args, _ = calls[index]
                error = message.get("error")
                cause = f" error: {_text(error)}" if error else ""
                calls[index] = (name, args, _cut(f"{text}{cause}"))
    changes: list[tuple[str, Any, Any]] = []
    env = record["env"]
    if record["before"] is not None and env is not None:
        _diff(record["before"], env.model_dump(mode="json"), "", changes)
    return PairRecord(
        utility=utility,
        security=security,
        output=_cut(output, _MAX_OUTPUT),
        tool_calls=calls,
        changes=changes,
        tool_results=[_cut(text) for text in results],
        seen=letters("\n".join(read_text(text) for text in results)),
    )
