"""What both APIs of the test server share: a request read from either wire form, a
model's answer before it is written in either, and OpenAI-style errors.

Chat completions (``_chat``) and the Responses API (``_responses``) read a request into
one ``ModelRequest``; the simulated agent and models answer it with an ``Answer``; each
API writes that answer in its own form. So rate limits, faults, latency and statistics
(``_app``) are one code path for both.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import attrs

from rampart.testing.server._tool_policy import DeclaredTool

__all__ = [
    "ASGIApp",
    "Answer",
    "BadModelInput",
    "BadRequest",
    "Call",
    "ChatMessage",
    "ModelRequest",
    "Receive",
    "Reply",
    "Scope",
    "Send",
    "chars",
    "check_ending",
    "error_body",
    "read_json_object",
    "read_tool_choice",
    "read_tools",
    "send_json",
    "words",
]

Scope = MutableMapping[str, Any]
_Event = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[_Event]]
Send = Callable[[_Event], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

Call = tuple[str, str, str]
"""``(call id, tool name, arguments as JSON text)`` of one tool call."""
ChatMessage = tuple[str, str, tuple[Call, ...]]
"""``(role, text, tool calls)`` of one message: roles ``system`` (also the Responses
API's ``instructions`` and ``developer`` messages), ``user``, ``assistant`` and
``tool`` (a tool's result)."""
Reply = tuple[int, dict[str, Any] | bytes, list[tuple[bytes, bytes]]]
"""Status, JSON body (or JSON text, already encoded) and extra headers of a response."""


class BadRequest(Exception):
    """A request the server refuses with a 4xx status and an OpenAI-style error body."""

    def __init__(
        self, status: int, message: str, *, param: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.param = param
        self.code = code


class BadModelInput(ValueError):
    """A request a simulated model cannot answer; the server answers ``400`` with the
    message (which says why)."""


def error_body(
    message: str, kind: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


@attrs.frozen(kw_only=True)
class ModelRequest:
    """One request, read from either API: the model, the request ``seed`` (chat
    completions only), the whole conversation (for the Responses API: the stored
    chain, then the new input), the declared function tools and ``tool_choice``
    (``None`` for ``"auto"``/``"required"``, ``"none"``, or a function's name)."""

    model: str
    seed: int | None
    messages: tuple[ChatMessage, ...]
    tools: tuple[DeclaredTool, ...] = ()
    tool_choice: str | None = None


@attrs.frozen(kw_only=True)
class Answer:
    """What a model answered: its text (``None``: none) and its tool calls. ``agent``
    marks the simulated agent's answers, the ones ``broken_rate`` may break; ``model``
    is the model name the answer reports."""

    model: str
    text: str | None
    calls: tuple[Call, ...] = ()
    agent: bool = False


def read_json_object(body: bytes) -> dict[str, Any]:
    """The request body as a JSON object, read by the one JSON reading policy."""
    from rampart.codec import parse_strict_json  # the one JSON reading policy

    try:
        request = parse_strict_json(data=body.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadRequest(400, "request body must be a JSON object") from None
    except ValueError as error:  # SchemaError: depth, size, duplicate keys, NaN
        raise BadRequest(400, f"request body must be a JSON object ({error})") from None
    if not isinstance(request, dict):
        raise BadRequest(400, "request body must be a JSON object")
    return request


def read_tools(value: object, *, flat: bool) -> tuple[DeclaredTool, ...]:
    """The function tools of a request's ``tools``: chat completions nest each under
    ``function``, the Responses API writes them ``flat``. Other tool types (a hosted
    web search, say) are ignored: no simulated model can use them."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise BadRequest(400, "tools must be an array", param="tools")
    tools = []
    for index, tool in enumerate(value):
        path = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise BadRequest(400, f"{path} must be an object", param=path)
        if tool.get("type") != "function":
            continue
        spec = tool if flat else tool.get("function")
        if not flat:
            path += ".function"
        if not isinstance(spec, dict):
            raise BadRequest(400, f"{path} must be an object", param=path)
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise BadRequest(400, f"{path}.name must be a non-empty string", param=f"{path}.name")
        description = spec.get("description")
        parameters = spec.get("parameters")
        tools.append(
            DeclaredTool(
                name=name,
                description=description if isinstance(description, str) else "",
                parameters=parameters if isinstance(parameters, dict) else {},
            )
        )
    return tuple(tools)


def read_tool_choice(value: object, *, flat: bool) -> str | None:
    """``None`` (``"auto"``, ``"required"`` or absent), ``"none"``, or the name of the
    one function a request forces (nested under ``function`` unless ``flat``)."""
    if value is None or value in ("auto", "required"):
        return None
    if value == "none":
        return "none"
    spec = value if flat else (value.get("function") if isinstance(value, dict) else None)
    name = spec.get("name") if isinstance(spec, dict) else None
    if isinstance(value, dict) and value.get("type") == "function" and isinstance(name, str):
        return name
    raise BadRequest(
        400,
        "tool_choice must be 'none', 'auto', 'required' or a function tool choice",
        param="tool_choice",
    )


def check_ending(
    messages: tuple[ChatMessage, ...], *, tool_loop: bool, param: str, expected: str
) -> None:
    """The conversation must end with the user's message, or (a tool-calling model's
    ``tool_loop``) with a tool's result; ``BadRequest`` saying ``expected`` otherwise."""
    role = messages[-1][0] if messages else None
    if role != "user" and not (tool_loop and role == "tool"):
        raise BadRequest(400, expected, param=param)


def chars(messages: tuple[ChatMessage, ...]) -> int:
    """Characters of text (and tool-call arguments) in ``messages``."""
    return sum(len(text) + sum(len(call[2]) for call in calls) for _, text, calls in messages)


def words(text: str | None) -> int:
    """Usage numbers count whitespace-separated words (an approximation of tokens)."""
    return len(text.split()) if text else 0


async def send_json(
    send: Send, status: int, payload: object, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Send a complete JSON response (``payload`` as a value, or as encoded JSON text)."""
    if isinstance(payload, bytes):
        body = payload
    else:
        body = json.dumps(payload, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
