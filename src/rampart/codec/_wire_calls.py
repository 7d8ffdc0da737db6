"""The tool calls in a model API's JSON bodies, for ``rampart._seen_calls``.

``rampart.limits.LimitedTransport`` reads them from the agent's model traffic as it
passes; the engine's error boundary from the request a failure carries
(``rampart.core._failures.failed_requests``). One reader for both.

Two wire formats, read from the same body shapes the test server serves:

- **Responses API**: a request's ``input`` items ``function_call`` (``call_id``,
  ``name``, ``arguments``) and ``function_call_output`` (``call_id``, ``output``); an
  answer's ``output`` items ``function_call``.
- **Chat completions**: a request's ``assistant`` messages' ``tool_calls`` (``id``,
  ``function.name``, ``function.arguments``) and ``tool`` messages (``tool_call_id``,
  ``content``); an answer's ``choices[].message.tool_calls``.

Anything else (another API, a body that is not JSON, a field of the wrong type) yields
nothing: this is evidence gathered on the side, never a reason to fail a request. Bodies
are read with rampart's one JSON policy, and only up to ``MAX_BODY_BYTES``.
"""

from __future__ import annotations

from typing import Any

from rampart._seen_calls import SeenCall
from rampart.codec._json import parse_strict_json

__all__ = ["MAX_BODY_BYTES", "answer_calls", "request_calls"]

MAX_BODY_BYTES = 4 << 20
"""Bodies longer than this are not read for tool calls."""


def _json(body: bytes) -> dict[str, Any] | None:
    if len(body) > MAX_BODY_BYTES:
        return None
    try:
        value = parse_strict_json(data=body.decode("utf-8"), max_chars=MAX_BODY_BYTES)
    except ValueError:  # not UTF-8, or not JSON rampart reads (SchemaError)
        return None
    return value if isinstance(value, dict) else None


def _arguments(raw: object) -> dict[str, Any] | None:
    """A call's arguments as an object (JSON text on both APIs); ``{"raw": text}`` when
    the text is not a JSON object, so an evaluator still sees it."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return None
    value = _json(raw.encode("utf-8")) if raw.strip() else {}
    return {"raw": raw} if value is None else value


def _text(content: object) -> str | None:
    """A tool result's text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part.get("text") for part in content if isinstance(part, dict)]
        return "".join(part for part in parts if isinstance(part, str))
    return None


def _asked(call_id: object, name: object, arguments: object) -> list[SeenCall]:
    if not isinstance(call_id, str) or not isinstance(name, str):
        return []
    return [SeenCall(call_id=call_id, name=name, arguments=_arguments(arguments))]


def _answered(call_id: object, output: object) -> list[SeenCall]:
    text = _text(output)
    if not isinstance(call_id, str) or text is None:
        return []
    return [SeenCall(call_id=call_id, output=text)]


def _chat_asked(message: dict[str, Any]) -> list[SeenCall]:
    found: list[SeenCall] = []
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            found += _asked(call.get("id"), function.get("name"), function.get("arguments"))
    return found


def request_calls(body: bytes) -> list[SeenCall]:
    """The calls a request body shows: asked for earlier, and answered (they ran)."""
    data = _json(body)
    if data is None:
        return []
    found: list[SeenCall] = []
    items = data.get("input")
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            found += _asked(item.get("call_id"), item.get("name"), item.get("arguments"))
        elif item.get("type") == "function_call_output":
            found += _answered(item.get("call_id"), item.get("output"))
    messages = data.get("messages")
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict):
            continue
        if message.get("role") == "assistant":
            found += _chat_asked(message)
        elif message.get("role") == "tool":
            found += _answered(message.get("tool_call_id"), message.get("content"))
    return found


def answer_calls(body: bytes) -> list[SeenCall]:
    """The calls a model's answer asks for."""
    data = _json(body)
    if data is None:
        return []
    found: list[SeenCall] = []
    items = data.get("output")
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict) and item.get("type") == "function_call":
            found += _asked(item.get("call_id"), item.get("name"), item.get("arguments"))
    choices = data.get("choices")
    for choice in choices if isinstance(choices, list) else ():
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict):
            found += _chat_asked(message)
    return found
