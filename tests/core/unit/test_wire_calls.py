"""The tool calls a failed model request shows: ``failed_requests`` finds the request
bodies an exception carries (through its chain and groups, by duck typing, without I/O),
and ``request_calls`` (the one reader, shared with ``LimitedTransport``) reads the calls
in them, on both APIs; anything else shows nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rampart._seen_calls import SeenCall
from rampart.codec._wire_calls import MAX_BODY_BYTES, answer_calls, request_calls
from rampart.core._failures import MAX_LINKS, MAX_REQUESTS, failed_requests
from tests._foreign import (
    APIConnectionError,
    ChatClientException,
    HTTPRequest,
    chat_request,
    rate_limit_error,
    responses_request,
    sdk_http,
    wrapped,
)

TICKET = ("call_0", "get_ticket", {"ticket_id": "T-7"}, "From: sarah@contoso.com ...")
RESET = ("call_1", "reset_user_password", {"send_to": "evil@x.example"}, "Link sent.")


def _calls(error: BaseException) -> list[SeenCall]:
    """What the boundary reads from ``error``."""
    return [call for body in failed_requests(error) for call in request_calls(body)]


def _ran(calls: list[SeenCall]) -> list[tuple[str, str | None, Any, str | None]]:
    """The calls, merged by id as the observation merges them."""
    merged: dict[str, list[Any]] = {}
    for call in calls:
        seen = merged.setdefault(call.call_id, [None, None, None])
        if call.name is not None:
            seen[0], seen[1] = call.name, call.arguments
        if call.output is not None:
            seen[2] = call.output
    return [(call_id, *parts) for call_id, parts in merged.items()]


BOTH_RAN = [
    ("call_0", "get_ticket", {"ticket_id": "T-7"}, TICKET[3]),
    ("call_1", "reset_user_password", {"send_to": "evil@x.example"}, "Link sent."),
]


class TestTheTwoApis:
    def test_chat_completions_resend_the_conversation(self) -> None:
        error = wrapped(rate_limit_error(request=chat_request(TICKET, RESET)))
        assert _ran(_calls(error)) == BOTH_RAN

    def test_responses_with_the_whole_input(self) -> None:
        error = wrapped(rate_limit_error(request=responses_request(TICKET, RESET, chained=False)))
        assert _ran(_calls(error)) == BOTH_RAN

    def test_a_chained_responses_request_names_no_call(self) -> None:
        """``previous_response_id``: only the last result is sent; its call's name and
        arguments are not in the request, and are not made up."""
        error = wrapped(rate_limit_error(request=responses_request(TICKET, RESET, chained=True)))
        assert _ran(_calls(error)) == [("call_1", None, None, "Link sent.")]

    def test_a_call_asked_for_but_not_answered_did_not_run(self) -> None:
        body = json.loads(chat_request(TICKET, RESET))
        body["messages"].pop()  # the reset's result
        calls = _ran(_calls(rate_limit_error(request=json.dumps(body).encode())))
        assert calls[-1] == ("call_1", "reset_user_password", {"send_to": "evil@x.example"}, None)

    def test_answers_are_read_by_the_same_module(self) -> None:
        answer = {"output": [{"type": "function_call", "call_id": "c", "name": "f"}]}
        assert answer_calls(json.dumps(answer).encode()) == [
            SeenCall(call_id="c", name="f", arguments=None)
        ]


class TestWhereTheRequestIs:
    def test_on_the_error_and_on_its_response(self) -> None:
        body = chat_request(TICKET)
        on_error = APIConnectionError()
        on_error.request = HTTPRequest(body)  # type: ignore[attr-defined]
        assert failed_requests(on_error) == (body,)
        assert failed_requests(rate_limit_error(request=body)) == (body,)  # both: once

    def test_nested_wrapping_through_cause_context_and_args(self) -> None:
        body = chat_request(TICKET, RESET)
        inner = rate_limit_error(request=body)
        outer: BaseException = wrapped(inner)
        for _ in range(3):
            middle = RuntimeError("retry layer")
            middle.__context__ = outer
            outer = ChatClientException("agent run failed", inner_exception=None)
            outer.__cause__ = middle
        assert failed_requests(outer) == (body,)
        assert failed_requests(ChatClientException("x", inner_exception=inner)) == (body,)

    def test_a_suppressed_context_is_not_followed(self) -> None:
        outer = RuntimeError("no")
        outer.__context__ = rate_limit_error(request=chat_request(TICKET))
        outer.__suppress_context__ = True
        assert failed_requests(outer) == ()

    def test_exception_groups_nested_in_order(self) -> None:
        first, second = chat_request(TICKET), chat_request(TICKET, RESET)
        group = ExceptionGroup(
            "model calls",
            [
                wrapped(rate_limit_error(request=first)),
                ExceptionGroup("inner", [ValueError("x"), rate_limit_error(request=second)]),
            ],
        )
        assert failed_requests(wrapped(group)) == (first, second)  # type: ignore[arg-type]

    def test_the_same_body_twice_is_read_once(self) -> None:
        body = chat_request(TICKET)
        group = ExceptionGroup("x", [rate_limit_error(request=body)] * 2)
        retried = ExceptionGroup("x", [rate_limit_error(request=bytes(body)) for _ in range(2)])
        assert failed_requests(group) == failed_requests(retried) == (body,)

    def test_bounded(self) -> None:
        bodies = [chat_request(prompt=str(number)) for number in range(MAX_REQUESTS + 3)]
        group = ExceptionGroup("x", [rate_limit_error(request=body) for body in bodies])
        assert failed_requests(group) == tuple(bodies[:MAX_REQUESTS])
        deep: BaseException = rate_limit_error(request=bodies[0])
        for _ in range(MAX_LINKS):
            deep = wrapped(deep)  # type: ignore[arg-type]
        assert failed_requests(deep) == ()
        cycle = RuntimeError("a")
        cycle.__cause__ = RuntimeError("b")
        cycle.__cause__.__cause__ = cycle
        assert failed_requests(cycle) == ()


class _Streamed:
    """A request whose body was never read (httpx raises ``RequestNotRead``), and one
    whose ``read()`` would do I/O: neither is read."""

    @property
    def content(self) -> bytes:
        raise RuntimeError("RequestNotRead")

    def read(self) -> bytes:
        raise AssertionError("read() must not be called")


class TestNothingIsShown:
    @pytest.mark.parametrize(
        "content",
        [
            b"not json",
            b"\xff\xfe\x00",
            b"[1, 2]",
            b'{"prompt": "hi", "messages": "not a list"}',
            b'{"messages": [{"role": "tool", "tool_call_id": 7, "content": "x"}]}',
            b'{"input": [{"type": "function_call", "name": "f", "call_id": null}]}',
            b'{"a": 1, "a": 2}',
            b'{"n": NaN}',
        ],
    )
    def test_bodies_that_are_not_a_model_request(self, content: bytes) -> None:
        error = rate_limit_error(request=content)
        assert failed_requests(error) == (content,)
        assert _calls(error) == []

    def test_a_body_over_the_limit_is_not_parsed(self) -> None:
        body = chat_request(TICKET, prompt="x" * MAX_BODY_BYTES)
        assert request_calls(body) == []

    @pytest.mark.parametrize("content", [None, "text", bytearray(b"{}"), memoryview(b"{}")])
    def test_a_body_that_is_not_bytes_is_not_taken(self, content: object) -> None:
        error = rate_limit_error()
        error.request = HTTPRequest(content)  # type: ignore[arg-type]
        assert failed_requests(error) == ()

    def test_a_streamed_request_is_not_read(self) -> None:
        error = rate_limit_error()
        error.request = _Streamed()  # type: ignore[assignment]
        assert failed_requests(error) == ()

    def test_no_request_at_all(self) -> None:
        assert failed_requests(wrapped(rate_limit_error())) == ()
        assert failed_requests(ValueError("x")) == ()


class TestRealClients:
    """The real classes as the SDK raises them: the body is the request's own bytes."""

    def test_openai_and_httpx(self) -> None:
        import httpx
        import openai
        from agent_framework.exceptions import ChatClientException as RealChatClientException

        body = chat_request(TICKET, RESET)
        http = sdk_http(openai)
        request = http.Request("POST", "http://127.0.0.1/v1/chat/completions", content=body)
        limited = openai.RateLimitError(
            "Error code: 429", response=http.Response(429, request=request), body=None
        )
        try:
            try:
                raise limited
            except openai.RateLimitError as error:
                raise RealChatClientException("failed", inner_exception=error) from error
        except RealChatClientException as outer:
            found = failed_requests(outer), _calls(outer)
        assert found[0] == (body,)
        assert _ran(found[1]) == BOTH_RAN
        plain = httpx.Request("POST", "http://127.0.0.1/v1/responses", content=body)
        status = httpx.HTTPStatusError(
            "429", request=plain, response=httpx.Response(429, request=plain)
        )
        assert failed_requests(status) == (body,)

        def stream() -> Any:
            yield body

        streamed = httpx.Request("POST", "http://127.0.0.1/v1/responses", content=stream())
        assert failed_requests(openai.APIConnectionError(request=streamed)) == ()
