from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from rampart.adapters import MalformedResponseError
from rampart.adapters._parse import error_detail, parse_completion
from rampart.core.errors import InfrastructureError
from rampart.core.types import ToolCall


def _body(**overrides: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "hi"}
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }
    body.update(overrides)
    return body


def _call(name: str = "f", arguments: object = "{}", **extra: Any) -> dict[str, Any]:
    return {
        "id": "c1",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
        **extra,
    }


def _with_message(**message: Any) -> bytes:
    return json.dumps(_body(choices=[{"message": {"role": "assistant", **message}}])).encode()


class TestParseCompletion:
    def test_text_usage_and_ids(self) -> None:
        """Content becomes the text; usage, model, id and finish reason go to metadata."""
        response, assistant = parse_completion(json.dumps(_body()).encode())
        assert response.text == "hi"
        assert response.tool_calls == []
        assert response.metadata == {
            "model": "m",
            "id": "chatcmpl-1",
            "finish_reason": "stop",
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        }
        assert assistant == {"role": "assistant", "content": "hi"}

    def test_null_content_is_empty_text(self) -> None:
        """A tool-only answer (content null) has text ''."""
        response, assistant = parse_completion(_with_message(content=None))
        assert response.text == ""
        assert assistant["content"] is None

    def test_tool_calls(self) -> None:
        """Tool calls become ToolCalls with decoded arguments and stay in the history."""
        body = _with_message(
            content=None, tool_calls=[_call("send_email", '{"recipient": "e@x.example"}')]
        )
        response, assistant = parse_completion(body)
        assert response.tool_calls == [
            ToolCall(name="send_email", arguments={"recipient": "e@x.example"})
        ]
        assert assistant["tool_calls"] == [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "send_email", "arguments": '{"recipient": "e@x.example"}'},
            }
        ]
        assert "unparsed_tool_arguments" not in response.metadata

    @pytest.mark.parametrize("arguments", ['["a", 1]', "not json", "42"])
    def test_non_object_arguments_are_kept_raw(self, arguments: str) -> None:
        """Arguments that are not a JSON object are kept under _raw and flagged in metadata."""
        body = _with_message(content="", tool_calls=[_call("ok", "{}"), _call("odd", arguments)])
        response, _ = parse_completion(body)
        assert response.tool_calls[1] == ToolCall(name="odd", arguments={"_raw": arguments})
        assert response.metadata["unparsed_tool_arguments"] == [1]

    def test_empty_arguments_mean_no_arguments(self) -> None:
        """An empty arguments string is a call without arguments."""
        response, _ = parse_completion(_with_message(content="", tool_calls=[_call("f", "")]))
        assert response.tool_calls == [ToolCall(name="f", arguments={})]

    def test_missing_optional_fields(self) -> None:
        """Without usage, model, id or finish reason the metadata says None or omits them."""
        body = json.dumps({"choices": [{"message": {"content": "x"}}]}).encode()
        response, _ = parse_completion(body)
        assert response.metadata == {"model": None, "id": None}


MALFORMED = [
    (b"not json", "response body: not valid JSON (8 bytes; Expecting value at line 1 column 1)"),
    (b"\xff\xfe", "response body: not UTF-8 text (2 bytes); expected a JSON object"),
    (b"[]", "response body: $ must be an object, got an array"),
    (b"{}", "response body: $.choices must be a non-empty array, got null"),
    (b'{"choices": []}', "response body: $.choices must be a non-empty array, got an array"),
    (b'{"choices": [1]}', "response body: $.choices[0] must be an object, got a number"),
    (b'{"choices": [{}]}', "response body: $.choices[0].message must be an object, got null"),
    (
        _with_message(content=5),
        "response body: $.choices[0].message.content must be a string or null, got a number",
    ),
    (
        _with_message(content=["x"]),
        "response body: $.choices[0].message.content must be a string or null, got an array",
    ),
    (
        _with_message(tool_calls={}),
        "response body: $.choices[0].message.tool_calls must be an array or null, got an object",
    ),
    (
        _with_message(tool_calls=[_call(), "call"]),
        "response body: $.choices[0].message.tool_calls[1] must be an object, got a string",
    ),
    (
        _with_message(tool_calls=[_call(), _call(arguments={"a": 1})]),
        "response body: $.choices[0].message.tool_calls[1].function.arguments must be a string, "
        "got an object",
    ),
    (
        _with_message(tool_calls=[_call(name="")]),
        "response body: $.choices[0].message.tool_calls[0].function.name must be a non-empty "
        "string, got a string",
    ),
    (
        _with_message(tool_calls=[{"type": "function"}]),
        "response body: $.choices[0].message.tool_calls[0].function must be an object, got null",
    ),
    (
        _with_message(tool_calls=[_call(type="retrieval")]),
        'response body: $.choices[0].message.tool_calls[0].type must be "function", '
        "got another string",
    ),
    (
        _with_message(tool_calls=[_call(id=7)]),
        "response body: $.choices[0].message.tool_calls[0].id must be a string or null, "
        "got a number",
    ),
    (
        json.dumps(_body(usage=[1])).encode(),
        "response body: $.usage must be an object or null, got an array",
    ),
    (
        json.dumps(_body(model=True)).encode(),
        "response body: $.model must be a string or null, got a boolean",
    ),
    (
        json.dumps(_body(choices=[{"message": {}, "finish_reason": 1}])).encode(),
        "response body: $.choices[0].finish_reason must be a string or null, got a number",
    ),
]


class TestMalformed:
    @pytest.mark.parametrize(("body", "message"), MALFORMED)
    def test_names_what_is_wrong(self, body: bytes, message: str) -> None:
        """Each malformed body fails with the JSON path and the kind of value found."""
        with pytest.raises(MalformedResponseError) as caught:
            parse_completion(body)
        assert str(caught.value) == message
        assert isinstance(caught.value, InfrastructureError)
        assert caught.value.transient is False

    def test_never_echoes_producer_data(self) -> None:
        """A huge wrong value is described by its kind, not repeated in the message."""
        body = _with_message(content={"x": "A" * 100_000})
        with pytest.raises(MalformedResponseError) as caught:
            parse_completion(body)
        assert "AAAA" not in str(caught.value)
        assert len(str(caught.value)) < 200

    def test_pickles(self) -> None:
        """The error survives an xdist hop."""
        error = MalformedResponseError("response body: $ must be an object, got null")
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is MalformedResponseError
        assert str(copy) == str(error)


class TestErrorDetail:
    def test_openai_error_message(self) -> None:
        """The error message of an OpenAI-style body is extracted, on one line."""
        body = json.dumps({"error": {"message": "model\nnot found"}}).encode()
        assert error_detail(body) == "model not found"

    def test_long_and_hostile_messages_are_cut_and_cleaned(self) -> None:
        """Escape sequences are removed and the text is capped."""
        body = json.dumps({"error": {"message": "\x1b[31m" + "B" * 1000}}).encode()
        detail = error_detail(body)
        assert detail.startswith("BBB")
        assert detail.endswith("...")
        assert len(detail) == 203

    @pytest.mark.parametrize("body", [b"oops", b"[]", b'{"error": "flat"}', b'{"error": {}}'])
    def test_anything_else_gives_nothing(self, body: bytes) -> None:
        """Bodies without an error.message string contribute no detail."""
        assert error_detail(body) == ""
