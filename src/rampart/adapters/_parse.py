"""Turning a chat-completions response body into a ``Response``, or saying what is wrong.

Every complaint names a JSON path and the kind of value found there (``"got a
list"``), never the value itself: the body comes from the system under test and may
be large or hostile.
"""

from __future__ import annotations

import json
from typing import Any

from rampart._text import one_line
from rampart.core.errors import InfrastructureError
from rampart.core.types import Response, ToolCall

__all__ = ["MalformedResponseError", "error_detail", "parse_completion"]

_DETAIL_LIMIT = 200


class MalformedResponseError(InfrastructureError):
    """A response body that does not follow the chat-completions dialect (not transient)."""


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__  # pragma: no cover - json.loads makes nothing else


def _fail(path: str, expected: str, value: object) -> MalformedResponseError:
    return MalformedResponseError(f"response body: {path} must be {expected}, got {_kind(value)}")


def _object(value: object, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, "an object", value)
    return value


def _optional_string(container: dict[str, Any], key: str, path: str) -> str | None:
    value = container.get(key)
    if value is not None and not isinstance(value, str):
        raise _fail(f"{path}.{key}", "a string or null", value)
    return value


def _decode(body: bytes) -> object:
    try:
        return json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise MalformedResponseError(
            f"response body: not UTF-8 text ({len(body)} bytes); expected a JSON object"
        ) from None
    except json.JSONDecodeError as exc:
        raise MalformedResponseError(
            f"response body: not valid JSON ({len(body)} bytes; {exc.msg} at "
            f"line {exc.lineno} column {exc.colno})"
        ) from None


def _tool_call(item: object, path: str) -> tuple[ToolCall, str | None, bool]:
    """One tool call, its id, and whether its arguments had to be kept raw."""
    call = _object(item, path)
    call_type = call.get("type")
    if call_type is not None and call_type != "function":
        if not isinstance(call_type, str):
            raise _fail(f"{path}.type", '"function"', call_type)
        raise MalformedResponseError(
            f'response body: {path}.type must be "function", got another string'
        )
    call_id = _optional_string(call, "id", path)
    function = _object(call.get("function"), f"{path}.function")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise _fail(f"{path}.function.name", "a non-empty string", name)
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        raise _fail(f"{path}.function.arguments", "a string", arguments)
    try:
        decoded = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict):
        return ToolCall(name=name, arguments=decoded), call_id, False
    return ToolCall(name=name, arguments={"_raw": arguments}), call_id, True


def parse_completion(body: bytes) -> tuple[Response, dict[str, Any]]:
    """``(response, assistant_message)`` for a 2xx body; ``MalformedResponseError`` otherwise.

    ``assistant_message`` is the normalised message to append to the conversation
    (role, content and tool calls as the server sent them).
    """
    root = _object(_decode(body), "$")
    choices = root.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _fail("$.choices", "a non-empty array", choices)
    choice = _object(choices[0], "$.choices[0]")
    message = _object(choice.get("message"), "$.choices[0].message")
    content = _optional_string(message, "content", "$.choices[0].message")
    raw_calls = message.get("tool_calls")
    if raw_calls is not None and not isinstance(raw_calls, list):
        raise _fail("$.choices[0].message.tool_calls", "an array or null", raw_calls)
    tool_calls: list[ToolCall] = []
    wire_calls: list[dict[str, Any]] = []
    unparsed: list[int] = []
    for index, item in enumerate(raw_calls or []):
        path = f"$.choices[0].message.tool_calls[{index}]"
        call, call_id, raw = _tool_call(item, path)
        tool_calls.append(call)
        if raw:
            unparsed.append(index)
        wire: dict[str, Any] = {
            "type": "function",
            "function": {"name": call.name, "arguments": item["function"]["arguments"]},
        }
        if call_id is not None:
            wire = {"id": call_id, **wire}
        wire_calls.append(wire)
    finish_reason = _optional_string(choice, "finish_reason", "$.choices[0]")
    model = _optional_string(root, "model", "$")
    completion_id = _optional_string(root, "id", "$")
    usage = root.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise _fail("$.usage", "an object or null", usage)
    metadata: dict[str, Any] = {"model": model, "id": completion_id}
    if finish_reason is not None:
        metadata["finish_reason"] = finish_reason
    if usage is not None:
        metadata["usage"] = usage
    if unparsed:
        metadata["unparsed_tool_arguments"] = unparsed
    assistant: dict[str, Any] = {"role": "assistant", "content": content}
    if wire_calls:
        assistant["tool_calls"] = wire_calls
    return Response(text=content or "", tool_calls=tool_calls, metadata=metadata), assistant


def error_detail(body: bytes) -> str:
    """A short, one-line ``error.message`` from an OpenAI-style error body, or ``""``."""
    try:
        root = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return ""
    error = root.get("error") if isinstance(root, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str):
        return ""
    text = one_line(message)
    if len(text) > _DETAIL_LIMIT:
        text = text[:_DETAIL_LIMIT] + "..."
    return text
