"""The chat-completions wire form: reading a request, writing an answer, breaking one.

``POST /v1/chat/completions`` (and the Azure paths) carry the whole conversation in
``messages``; ``read_chat`` turns the body into a ``ModelRequest``, ``chat_payload``
writes an ``Answer`` as a ``chat.completion``, and ``broken_body`` turns that into one
of the broken ``200`` bodies (``BROKEN_BODIES``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rampart.testing.server._wire import (
    Answer,
    BadRequest,
    Call,
    ChatMessage,
    ModelRequest,
    check_ending,
    read_tool_choice,
    read_tools,
    words,
)

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["broken_body", "chat_payload", "read_chat"]


def _message_text(content: object, path: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        texts = []
        for index, part in enumerate(content):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise BadRequest(400, f"{path}[{index}] must be a content part object with a type")
            if part["type"] == "text":
                text = part.get("text")
                if not isinstance(text, str):
                    raise BadRequest(400, f"{path}[{index}].text must be a string")
                texts.append(text)
        return "\n".join(texts)
    raise BadRequest(400, f"{path} must be a string, null or an array of content parts")


def _normalise(messages: object) -> tuple[ChatMessage, ...]:
    """``(role, text, tool calls)`` per message; ``BadRequest`` naming the bad field."""
    if not isinstance(messages, list) or not messages:
        raise BadRequest(400, "messages must be a non-empty array", param="messages")
    normalised = []
    for index, message in enumerate(messages):
        path = f"messages[{index}]"
        if not isinstance(message, dict):
            raise BadRequest(400, f"{path} must be an object", param=path)
        role = message.get("role")
        if not isinstance(role, str):
            raise BadRequest(400, f"{path}.role must be a string", param=f"{path}.role")
        text = _message_text(message.get("content"), f"{path}.content")
        calls: list[Call] = []
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise BadRequest(400, f"{path}.tool_calls must be an array", param=f"{path}.tool_calls")
        for number, call in enumerate(raw_calls):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                raise BadRequest(400, f"{path}.tool_calls[{number}].function must be an object")
            calls.append(
                (
                    str(call.get("id", "")),
                    str(function.get("name", "")),
                    str(function.get("arguments", "")),
                )
            )
        normalised.append((role, text, tuple(calls)))
    return tuple(normalised)


def read_chat(
    request: dict[str, Any], *, model: str | None, tool_loop: Callable[[str], bool]
) -> ModelRequest:
    """A chat-completions body as a ``ModelRequest`` (``model``: the Azure deployment,
    which overrides the body's). The last message must be the user's, except for a
    tool-calling model (``tool_loop``), whose conversation goes on after each
    tool result."""
    requested = request.get("model")
    if not isinstance(requested, str) or not requested:
        raise BadRequest(400, "model must be a non-empty string", param="model")
    if request.get("stream"):
        raise BadRequest(400, "stream is not supported by this server", param="stream")
    seed = request.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise BadRequest(400, "seed must be an integer", param="seed")
    messages = _normalise(request.get("messages"))
    model = model or requested
    loop = tool_loop(model)
    expected = "the last message must have role 'user'" + (" or 'tool'" if loop else "")
    check_ending(messages, tool_loop=loop, param="messages", expected=expected)
    return ModelRequest(
        model=model,
        seed=seed,
        messages=messages,
        tools=read_tools(request.get("tools"), flat=False),
        tool_choice=read_tool_choice(request.get("tool_choice"), flat=False),
    )


def chat_payload(
    answer: Answer, *, number: int, created: int, prompt_tokens: int
) -> dict[str, Any]:
    """``answer`` as a ``chat.completion`` (id ``chatcmpl-<number>``), with word-count
    usage: ``prompt_tokens`` given, the completion's counted here."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.text}
    if answer.calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            for call_id, name, arguments in answer.calls
        ]
    written = words(answer.text) + sum(words(arguments) for _, _, arguments in answer.calls)
    return {
        "id": f"chatcmpl-{number:08d}",
        "object": "chat.completion",
        "created": created,
        "model": answer.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if answer.calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": written,
            "total_tokens": prompt_tokens + written,
        },
    }


def broken_body(kind: str, payload: dict[str, Any]) -> bytes:
    """``payload`` (a well-formed completion) turned into the broken body ``kind``.

    See ``BROKEN_BODIES`` for what each one is. The id, model and usage are kept, so
    only the part under test is wrong.
    """
    choice = payload["choices"][0]
    message = choice["message"]
    if kind == "duplicate-tool-calls":
        # Written by hand: a JSON encoder cannot produce a repeated key.
        calls = json.dumps(message.get("tool_calls", []), separators=(",", ":"))
        content = json.dumps(message.get("content"))
        head = {key: value for key, value in payload.items() if key != "choices"}
        text = json.dumps(head, separators=(",", ":"))[:-1]
        return (
            f'{text},"choices":[{{"index":0,"message":{{"role":"assistant",'
            f'"content":{content},"tool_calls":{calls},"tool_calls":null}},'
            f'"finish_reason":{json.dumps(choice["finish_reason"])}}}]}}'
        ).encode()
    broken = dict(payload)
    if kind == "empty-message":
        broken["choices"] = [{"message": {}}]
    elif kind == "error-object":
        broken["error"] = {"message": "upstream model failed", "type": "server_error"}
        broken["choices"] = [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None},
                "finish_reason": "error",
            }
        ]
    elif kind == "finish-error":
        broken["choices"] = [{**choice, "finish_reason": "error"}]
    elif kind == "content-filter":
        broken["choices"] = [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None},
                "finish_reason": "content_filter",
            }
        ]
    else:  # pragma: no cover - ServerOptions only admits BROKEN_BODIES
        raise ValueError(f"unknown broken body {kind!r}")
    return json.dumps(broken, separators=(",", ":")).encode()
