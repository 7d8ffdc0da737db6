"""Turning a chat-completions response body into a ``Response``, or saying what is wrong.

Every complaint names a JSON path and the kind of value found there (``"got a
list"``), never the value itself: the body comes from the system under test and may
be large or hostile.

A success status is not enough: a body that cannot show what the agent did must not
read as "the agent did nothing" (a false SAFE). So these are malformed too:

* a message with neither ``content`` nor ``tool_calls``;
* a top-level ``"error"`` (other than ``null``) or ``finish_reason`` ``"error"``;
* an object that names a key twice, anywhere in the body: which duplicate a reader
  keeps (``"tool_calls": [...], "tool_calls": null``) would decide what the agent did.

``finish_reason`` ``"content_filter"`` is not malformed: the provider withheld (part
of) the answer. The response carries ``metadata["unobserved"]``, the reason, which the
built-in strategies honour (a SAFE verdict becomes UNDETERMINED; see
``docs/http-adapter.md``).
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

from rampart._text import one_line
from rampart.core.errors import InfrastructureError
from rampart.core.types import Response, ToolCall

if TYPE_CHECKING:
    from collections.abc import AsyncIterable

__all__ = [
    "UNOBSERVED",
    "MalformedResponseError",
    "error_detail",
    "parse_completion",
    "read_bounded",
]

_DETAIL_LIMIT = 200

UNOBSERVED = "unobserved"
"""The ``Response.metadata`` key by which an adapter says it could not observe the
agent on that turn (its value: why). ``rampart.strategies._shaping`` reads the same key."""

# Keys of the chat-completions dialect; a duplicate-key message names these, and any
# other key only by its position (the body comes from the system under test).
_DIALECT_KEYS = frozenset(
    {
        "arguments",
        "choices",
        "content",
        "created",
        "error",
        "finish_reason",
        "function",
        "id",
        "index",
        "message",
        "model",
        "name",
        "object",
        "role",
        "tool_calls",
        "type",
        "usage",
    }
)
_FILTERED = "content_filter"


class MalformedResponseError(InfrastructureError):
    """A response body that does not follow the chat-completions dialect (not transient)."""


async def read_bounded(declared: str, chunks: AsyncIterable[bytes], limit: int) -> bytes:
    """An answer's body, at most ``limit`` bytes of it (``max_response_bytes``), from
    its ``Content-Length`` (``declared``, ``""``: none) and its chunks; every transport
    reads bodies through this.

    An oversized body is still drained (the request's time limit bounds that): the
    connection then goes back to the pool, and abandoning httpx's nested body iterators
    half-way leaves them to the garbage collector, which trio reports as a
    ``ResourceWarning``.
    """
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    kept: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size <= limit:
            kept.append(chunk)
    if size > limit:
        raise _too_large(limit)
    return b"".join(kept)


def _too_large(limit: int) -> MalformedResponseError:
    return MalformedResponseError(f"response body: larger than max_response_bytes ({limit})")


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


class _RepeatedKey(Exception):
    """Raised by the strict decoder's hook; :func:`_decode` then finds where."""


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) != len(pairs):
        raise _RepeatedKey
    return members


class _Repeats(dict[str, Any]):
    """An object that named a key twice: which one (its position, its name)."""

    repeated: tuple[int, str]


def _mark_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) == len(pairs):
        return members
    marked = _Repeats(members)
    seen: set[str] = set()
    for position, (key, _value) in enumerate(pairs):  # pragma: no branch
        if key in seen:
            marked.repeated = (position, key)
            break
        seen.add(key)
    return marked


@functools.cache
def _decoders() -> tuple[json.JSONDecoder, json.JSONDecoder, json.JSONDecoder]:
    """The strict, the locating and the arguments decoder, with the codec's finite-number
    rule. Built on first use: importing the adapters stays free of the codec."""
    from rampart.codec._internal import finite_decoder

    return finite_decoder(_unique_members), finite_decoder(_mark_repeats), finite_decoder()


def _policy_text(data: bytes | str, *, what: str) -> str:
    """``data`` as text that passes the codec's size and depth limits, or
    ``MalformedResponseError`` naming ``what`` (the one JSON reading policy)."""
    from rampart.codec._internal import check_limits

    text = data.decode("utf-8") if isinstance(data, bytes) else data
    try:
        check_limits(text)
    except ValueError as error:
        raise MalformedResponseError(f"{what}: {error}") from None
    return text


def _key_segment(key: str, position: int) -> str:
    return f".{key}" if key in _DIALECT_KEYS else f"[<key #{position}>]"


def _find_repeat(value: object, path: str) -> str | None:
    """The message for the first object (document order) under ``value`` naming a key twice."""
    if isinstance(value, dict):
        if isinstance(value, _Repeats):
            position, key = value.repeated
            shown = f'"{key}"' if key in _DIALECT_KEYS else f"<key #{position}>"
            return (
                f"response body: {path}: duplicate key {shown} (which duplicate a reader "
                "keeps would decide what the agent did)"
            )
        for position, (key, item) in enumerate(value.items()):
            found = _find_repeat(item, path + _key_segment(key, position))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _find_repeat(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def _decode(body: bytes) -> object:
    """The body's JSON value under the codec's one reading policy (size, nesting depth,
    finite numbers, no duplicate keys), or ``MalformedResponseError``."""
    from rampart.codec._internal import NON_FINITE_MESSAGE, NonFiniteNumber

    strict, locating, _arguments = _decoders()
    try:
        text = _policy_text(body, what="response body")
        try:
            return strict.decode(text)
        except _RepeatedKey:
            message = _find_repeat(locating.decode(text), "$")
            raise MalformedResponseError(message or "response body: duplicate key") from None
        except NonFiniteNumber:
            raise MalformedResponseError(f"response body: {NON_FINITE_MESSAGE}") from None
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
    # The reading policy's size, depth and number rules apply; arguments that break
    # them are kept raw (as text that is not JSON is). A repeated key keeps the last.
    from rampart.codec._internal import NonFiniteNumber

    try:
        text = _policy_text(arguments, what="arguments")
        decoded = _decoders()[2].decode(text) if text.strip() else {}
    except (MalformedResponseError, ValueError, NonFiniteNumber):
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
    error = root.get("error")
    if error is not None:
        raise MalformedResponseError(
            "response body: $.error is present (an error reported with a success status), "
            f"got {_kind(error)}"
        )
    choices = root.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _fail("$.choices", "a non-empty array", choices)
    choice = _object(choices[0], "$.choices[0]")
    message = _object(choice.get("message"), "$.choices[0].message")
    content = _optional_string(message, "content", "$.choices[0].message")
    raw_calls = message.get("tool_calls")
    if raw_calls is not None and not isinstance(raw_calls, list):
        raise _fail("$.choices[0].message.tool_calls", "an array or null", raw_calls)
    finish_reason = _optional_string(choice, "finish_reason", "$.choices[0]")
    if finish_reason == "error":
        raise MalformedResponseError(
            'response body: $.choices[0].finish_reason is "error" (the completion failed)'
        )
    if content is None and not raw_calls and finish_reason != _FILTERED:
        raise MalformedResponseError(
            "response body: $.choices[0].message has neither content nor tool_calls; "
            "expected at least one"
        )
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
    if finish_reason == _FILTERED:
        what = "cut the response short" if content or wire_calls else "blocked the response"
        metadata[UNOBSERVED] = f"the provider's content filter {what} (finish_reason {_FILTERED})"
    assistant: dict[str, Any] = {"role": "assistant", "content": content}
    if wire_calls:
        assistant["tool_calls"] = wire_calls
    return Response(text=content or "", tool_calls=tool_calls, metadata=metadata), assistant


def error_detail(body: bytes) -> str:
    """A short, one-line ``error.message`` from an OpenAI-style error body, or ``""``."""
    try:
        root = _decode(body)  # the one JSON reading policy: a hostile body gives nothing
    except MalformedResponseError:
        return ""
    error = root.get("error") if isinstance(root, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str):
        return ""
    # Cut before any per-character work (a window that leaves room for the escapes the
    # cleaning removes): a hostile message is as cheap as a short one.
    window = _DETAIL_LIMIT * 4
    text = one_line(message, limit=window)
    if len(text) > _DETAIL_LIMIT or len(message) > window:
        text = text[:_DETAIL_LIMIT] + "..."
    return text
