"""The Responses API wire form (``POST /v1/responses``): reading, writing, remembering.

What a real client sends (captured from Agent Framework's ``OpenAIChatClient``):
``instructions`` (the system prompt, on every call), ``input`` as items (messages whose
content is a string or ``input_text`` parts; ``function_call`` items echoed back;
``function_call_output`` items carrying tool results), flat function ``tools``,
``tool_choice``, ``include`` and ``stream: false``; a follow-up sends only the new items
and the ``previous_response_id`` of the answer it continues.

``read_responses`` reads a body into ``ResponsesInput``; the server looks the chain up
in its ``ResponseStore``, answers the whole conversation (chain, then new input) like
any other, writes the ``Answer`` with ``response_payload`` (``message`` /
``output_text`` and ``function_call`` output items, usage, a ``resp_`` id) and stores
the new items with its answer under that id. ``broken_response`` breaks a well-formed
answer the way ``BROKEN_BODIES`` break a chat completion.
"""

from __future__ import annotations

import json
import secrets
from collections import OrderedDict
from typing import Any

import attrs

from rampart.testing.server._tool_policy import DeclaredTool
from rampart.testing.server._wire import (
    Answer,
    BadRequest,
    Call,
    ChatMessage,
    chars,
    read_tool_choice,
    read_tools,
    words,
)

__all__ = [
    "ResponseStore",
    "ResponsesInput",
    "Stored",
    "broken_response",
    "new_response_id",
    "read_responses",
    "response_payload",
]

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_TEXT_PARTS = ("input_text", "output_text", "text")
_ITEM_TYPES = "message, function_call, function_call_output, reasoning"


@attrs.frozen(kw_only=True)
class ResponsesInput:
    """A Responses API body, read: the new ``items`` (normalised messages), what the
    answer echoes (``raw_tools``, ``raw_tool_choice``) and what chains it."""

    model: str
    instructions: str | None
    items: tuple[ChatMessage, ...]
    previous_response_id: str | None
    tools: tuple[DeclaredTool, ...]
    tool_choice: str | None
    raw_tools: list[Any]
    raw_tool_choice: Any
    store: bool

    @property
    def size(self) -> int:
        """Characters of text in the new items and the instructions."""
        return len(self.instructions or "") + chars(self.items)


def _string(item: dict[str, Any], key: str, path: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise BadRequest(400, f"{path}.{key} must be a string", param=f"{path}.{key}")
    return value


def _content_text(content: object, path: str) -> str:
    """A message's (or a tool output's) text: a string, or the text of its parts
    (``input_text``, ``output_text``, ``refusal``); images, files and audio carry none."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise BadRequest(400, f"{path} must be a string or an array of content parts", param=path)
    texts = []
    for index, part in enumerate(content):
        where = f"{path}[{index}]"
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise BadRequest(400, f"{where} must be a content part object with a type", param=where)
        kind = part["type"]
        if kind in _TEXT_PARTS:
            texts.append(_string(part, "text", where))
        elif kind == "refusal":
            texts.append(_string(part, "refusal", where))
    return "\n".join(texts)


def _items(value: object) -> tuple[ChatMessage, ...]:
    """``input`` as messages. Consecutive ``function_call`` items join the assistant
    message before them (as one chat-completions message carries its tool calls);
    ``reasoning`` items carry nothing a simulated model reads."""
    if isinstance(value, str):
        return (("user", value, ()),)
    if not isinstance(value, list) or not value:
        raise BadRequest(400, "input must be a string or a non-empty array of items", param="input")
    messages: list[ChatMessage] = []
    for index, item in enumerate(value):
        path = f"input[{index}]"
        if not isinstance(item, dict):
            raise BadRequest(400, f"{path} must be an object", param=path)
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if not isinstance(role, str) or role not in _ROLES:
                raise BadRequest(
                    400,
                    f"{path}.role must be one of 'user', 'assistant', 'system', 'developer'",
                    param=f"{path}.role",
                )
            text = _content_text(item.get("content"), f"{path}.content")
            messages.append((_ROLES[role], text, ()))
        elif kind == "function_call":
            call: Call = (
                _string(item, "call_id", path),
                _string(item, "name", path),
                _string(item, "arguments", path),
            )
            if messages and messages[-1][0] == "assistant":
                role, text, calls = messages[-1]
                messages[-1] = (role, text, (*calls, call))
            else:
                messages.append(("assistant", "", (call,)))
        elif kind == "function_call_output":
            _string(item, "call_id", path)
            messages.append(("tool", _content_text(item.get("output"), f"{path}.output"), ()))
        elif kind != "reasoning":
            raise BadRequest(
                400,
                f"{path}.type {kind!r} is not supported by this server ({_ITEM_TYPES})",
                param=f"{path}.type",
            )
    return tuple(messages)


def read_responses(request: dict[str, Any], *, model: str | None) -> ResponsesInput:
    """A Responses API body as ``ResponsesInput`` (``model`` overrides the body's)."""
    requested = request.get("model")
    if not isinstance(requested, str) or not requested:
        raise BadRequest(400, "model must be a non-empty string", param="model")
    if request.get("stream"):
        raise BadRequest(
            400,
            "stream is not supported by this server; send stream: false (or leave it out)",
            param="stream",
        )
    instructions = request.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise BadRequest(400, "instructions must be a string or null", param="instructions")
    previous = request.get("previous_response_id")
    if previous is not None and (not isinstance(previous, str) or not previous):
        raise BadRequest(
            400, "previous_response_id must be a non-empty string", param="previous_response_id"
        )
    store = request.get("store", True)
    if not isinstance(store, bool):
        raise BadRequest(400, "store must be a boolean", param="store")
    raw_tools = request.get("tools")
    return ResponsesInput(
        model=model or requested,
        instructions=instructions,
        items=_items(request.get("input")),
        previous_response_id=previous,
        tools=read_tools(raw_tools, flat=True),
        tool_choice=read_tool_choice(request.get("tool_choice"), flat=True),
        raw_tools=raw_tools if isinstance(raw_tools, list) else [],
        raw_tool_choice=request.get("tool_choice", "auto"),
        store=store,
    )


def new_response_id() -> str:
    """A fresh ``resp_`` id (random: ids from another server run never resolve here)."""
    return f"resp_{secrets.token_hex(24)}"


def response_payload(
    answer: Answer, *, response_id: str, created: int, request: ResponsesInput, prompt_tokens: int
) -> dict[str, Any]:
    """``answer`` as a ``response`` object: a ``message`` item with ``output_text``
    (when it has text, or nothing else), then one ``function_call`` item per call."""
    suffix = response_id.removeprefix("resp_")
    output: list[dict[str, Any]] = []
    if answer.text or not answer.calls:
        output.append(
            {
                "type": "message",
                "id": f"msg_{suffix}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": answer.text or "", "annotations": []}],
            }
        )
    for number, (call_id, name, arguments) in enumerate(answer.calls):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{suffix}_{number}",
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
                "status": "completed",
            }
        )
    written = words(answer.text) + sum(words(arguments) for _, _, arguments in answer.calls)
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": request.instructions,
        "model": answer.model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": request.previous_response_id,
        "store": request.store,
        "temperature": 1.0,
        "top_p": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": request.raw_tool_choice,
        "tools": request.raw_tools,
        "truncation": "disabled",
        "metadata": {},
        "usage": {
            "input_tokens": prompt_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": written,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt_tokens + written,
        },
    }


def broken_response(kind: str, payload: dict[str, Any]) -> bytes:
    """``payload`` (a well-formed response) broken the way ``kind`` breaks a chat
    completion: ``empty-message`` (no output items), ``error-object`` (status
    ``failed`` with an ``error``, no output), ``finish-error`` (the real output, status
    ``failed``), ``duplicate-tool-calls`` (``output`` written again without its
    function calls: a lenient parser keeps the second) and ``content-filter`` (status
    ``incomplete`` for ``content_filter``, no output)."""
    if kind == "duplicate-tool-calls":
        # Written by hand: a JSON encoder cannot produce a repeated key.
        kept = [item for item in payload["output"] if item["type"] != "function_call"]
        text = json.dumps(payload, separators=(",", ":"))[:-1]
        return f'{text},"output":{json.dumps(kept, separators=(",", ":"))}}}'.encode()
    broken = dict(payload)
    if kind == "empty-message":
        broken["output"] = []
    elif kind == "error-object":
        broken.update(
            status="failed",
            output=[],
            error={"code": "server_error", "message": "upstream model failed"},
        )
    elif kind == "finish-error":
        broken["status"] = "failed"
    elif kind == "content-filter":
        broken.update(
            status="incomplete", output=[], incomplete_details={"reason": "content_filter"}
        )
    else:  # pragma: no cover - ServerOptions only admits BROKEN_BODIES
        raise ValueError(f"unknown broken body {kind!r}")
    return json.dumps(broken, separators=(",", ":")).encode()


class Stored:
    """One stored response: the messages it added (its input items and its answer)
    after its ``parent``'s, and ``size``, the characters of its whole history."""

    __slots__ = ("messages", "parent", "size")

    def __init__(self, parent: Stored | None, messages: tuple[ChatMessage, ...]) -> None:
        self.parent = parent
        self.messages = messages
        self.size: int = chars(messages) + (parent.size if parent is not None else 0)

    def history(self) -> tuple[ChatMessage, ...]:
        """The whole conversation up to and including this response's answer."""
        parts: list[tuple[ChatMessage, ...]] = []
        node: Stored | None = self
        while node is not None:
            parts.append(node.messages)
            node = node.parent
        return tuple(message for part in reversed(parts) for message in part)


class ResponseStore:
    """Stored responses by id, for ``previous_response_id``: at most ``max_responses``
    of them and ``max_chars`` characters of history in all (a response's whole
    history counts, so what the chains keep alive is bounded too); the least recently
    used are forgotten first."""

    def __init__(self, *, max_responses: int, max_chars: int) -> None:
        self._stored: OrderedDict[str, Stored] = OrderedDict()
        self._max_responses = max_responses
        self._max_chars = max_chars
        self._chars = 0

    def __len__(self) -> int:
        return len(self._stored)

    @property
    def chars(self) -> int:
        return self._chars

    def get(self, response_id: str) -> Stored | None:
        stored = self._stored.get(response_id)
        if stored is not None:
            self._stored.move_to_end(response_id)
        return stored

    def add(self, response_id: str, stored: Stored) -> None:
        if stored.size > self._max_chars:
            return  # could never be kept: a follow-up finds it forgotten
        self._stored[response_id] = stored
        self._chars += stored.size
        while len(self._stored) > self._max_responses or self._chars > self._max_chars:
            _, oldest = self._stored.popitem(last=False)
            self._chars -= oldest.size

    def clear(self) -> None:
        self._stored.clear()
        self._chars = 0
