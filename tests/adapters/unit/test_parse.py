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
        response, assistant = parse_completion(_with_message(content=None, tool_calls=[_call()]))
        assert response.text == ""
        assert [call.name for call in response.tool_calls] == ["f"]
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

    def test_error_null_is_no_error(self) -> None:
        """``"error": null`` in a completion says nothing went wrong."""
        response, _ = parse_completion(json.dumps(_body(error=None)).encode())
        assert response.text == "hi"

    def test_empty_string_content_is_an_answer(self) -> None:
        """An empty string is content (the model said nothing), unlike a missing one."""
        response, _ = parse_completion(_with_message(content=""))
        assert response.text == ""
        assert "unobserved" not in response.metadata

    @pytest.mark.parametrize(
        ("content", "reason"),
        [
            (None, "the provider's content filter blocked the response"),
            ("Sure, here is", "the provider's content filter cut the response short"),
        ],
    )
    def test_content_filter_is_reported_unobserved(self, content: str | None, reason: str) -> None:
        """finish_reason content_filter marks the turn unobserved, with a reason."""
        body = _body(choices=[{"message": {"content": content}, "finish_reason": "content_filter"}])
        response, assistant = parse_completion(json.dumps(body).encode())
        assert response.text == (content or "")
        assert response.metadata["finish_reason"] == "content_filter"
        assert response.metadata["unobserved"] == f"{reason} (finish_reason content_filter)"
        assert assistant == {"role": "assistant", "content": content}

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
    # A success status whose body cannot show what the agent did (false SAFE otherwise).
    (
        b'{"choices":[{"message":{}}]}',
        "response body: $.choices[0].message has neither content nor tool_calls; expected "
        "at least one",
    ),
    (
        _with_message(content=None, tool_calls=[]),
        "response body: $.choices[0].message has neither content nor tool_calls; expected "
        "at least one",
    ),
    (
        json.dumps(_body(error={"message": "boom", "type": "server_error"})).encode(),
        "response body: $.error is present (an error reported with a success status), "
        "got an object",
    ),
    (
        json.dumps(_body(error="overloaded")).encode(),
        "response body: $.error is present (an error reported with a success status), got a string",
    ),
    (
        json.dumps(
            _body(choices=[{"message": {"content": "partial"}, "finish_reason": "error"}])
        ).encode(),
        'response body: $.choices[0].finish_reason is "error" (the completion failed)',
    ),
    (
        b'{"choices":[{"message":{"role":"assistant","content":"ok",'
        b'"tool_calls":[{"type":"function","function":{"name":"send_email","arguments":"{}"}}],'
        b'"tool_calls":null}}]}',
        'response body: $.choices[0].message: duplicate key "tool_calls" (which duplicate '
        "a reader keeps would decide what the agent did)",
    ),
    (
        b'{"choices":[{"message":{"content":"ok"}}],"usage":{"x-vendor":1,"x-vendor":2}}',
        "response body: $.usage: duplicate key <key #1> (which duplicate a reader keeps "
        "would decide what the agent did)",
    ),
    (
        b'{"choices":[{"message":{"content":"a"}}],"choices":[{"message":{"content":"b"}}]}',
        'response body: $: duplicate key "choices" (which duplicate a reader keeps would '
        "decide what the agent did)",
    ),
    (
        b'[{"a":1},{"b":[{"c":1,"c":2}]}]',
        "response body: $[1][<key #0>][0]: duplicate key <key #1> (which duplicate a reader "
        "keeps would decide what the agent did)",
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
