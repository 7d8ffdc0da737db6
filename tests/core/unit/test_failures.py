"""``classify_failure``: foreign failures read by duck typing, through cause chains and
exception groups, and never a raise, whatever the exception holds."""

from __future__ import annotations

import enum
import itertools
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rampart.core._failures import (
    MAX_LEAVES,
    MAX_LINKS,
    Failure,
    FailureKind,
    classify_failure,
    failed_requests,
    type_label,
)
from rampart.core.errors import (
    AdapterContractError,
    DriverError,
    EvaluatorError,
    InfrastructureError,
    SchemaError,
)
from rampart.limits import RateLimitedError
from tests._foreign import (
    APIConnectionError,
    APITimeoutError,
    BadRequestError,
    ChatClientException,
    ClientResponseError,
    ConnectError,
    HTTPResponse,
    HTTPStatusError,
    InternalServerError,
    rate_limit_error,
    sdk_http,
    wrapped,
)

if TYPE_CHECKING:
    from collections.abc import Callable

RATE_LIMITED = FailureKind.RATE_LIMITED
TRANSIENT = FailureKind.TRANSIENT
FATAL = FailureKind.FATAL


def _read(error: BaseException) -> tuple[FailureKind, bool, str]:
    failure = classify_failure(error)
    return failure.kind, failure.infrastructure, failure.reason


class TestShapes:
    """Each SDK's failure, as it is raised."""

    @pytest.mark.parametrize(
        ("error", "expected"),
        [
            (rate_limit_error(), (RATE_LIMITED, True, "rate limited")),
            (
                InternalServerError("boom", response=HTTPResponse(500)),
                (TRANSIENT, True, "server error"),
            ),
            (  # Anthropic's "overloaded"
                InternalServerError("overloaded", response=HTTPResponse(529)),
                (TRANSIENT, True, "server error"),
            ),
            (APIConnectionError(), (TRANSIENT, True, "connection failed")),
            (APITimeoutError(), (TRANSIENT, True, "timed out")),
            (ConnectError("refused"), (TRANSIENT, True, "connection failed")),
            (
                HTTPStatusError("x", response=HTTPResponse(503, {"Retry-After": "2"})),
                (RATE_LIMITED, True, "rate limited"),
            ),
            (
                HTTPStatusError("x", response=HTTPResponse(503)),
                (TRANSIENT, True, "server error"),
            ),
            (
                HTTPStatusError("x", response=HTTPResponse(408)),
                (TRANSIENT, True, "timed out"),
            ),
            (ClientResponseError(429, {"Retry-After": "1"}), (RATE_LIMITED, True, "rate limited")),
            (ClientResponseError(502), (TRANSIENT, True, "server error")),
            # A request the server rejected is the caller's bug, not an outage.
            (BadRequestError("bad", response=HTTPResponse(400)), (FATAL, False, "HTTP 400")),
            (ClientResponseError(401), (FATAL, False, "HTTP 401")),
        ],
    )
    def test_reading(self, error: BaseException, expected: tuple[FailureKind, bool, str]) -> None:
        assert _read(error) == expected

    def test_status_headers_and_description(self) -> None:
        failure = classify_failure(wrapped(rate_limit_error(retry_after="2")))
        assert failure.status == 429
        # Only the retry and rate-limit headers, lower-cased; the request id is left out.
        assert failure.headers == (("x-ratelimit-remaining-requests", "0"), ("retry-after", "2"))
        assert failure.wrappers == ("agent_framework.ChatClientException",)
        assert failure.describe() == (
            "rate limited (HTTP 429, openai.RateLimitError wrapped in "
            "agent_framework.ChatClientException)"
        )

    def test_aiohttp_headers_are_on_the_error(self) -> None:
        failure = classify_failure(ClientResponseError(429, {"Retry-After": "7"}))
        assert failure.headers == (("retry-after", "7"),)

    def test_a_name_never_makes_a_rate_limit(self) -> None:
        class RateLimitError(Exception):
            pass

        assert _read(RateLimitError("slow down")) == (FATAL, False, "")

    @pytest.mark.parametrize(
        ("error", "kind"),
        [
            (RateLimitedError("429"), RATE_LIMITED),
            (InfrastructureError("reset", transient=True), TRANSIENT),
            (InfrastructureError("401"), FATAL),
            (AdapterContractError("odd", transient=True), FATAL),
            (EvaluatorError("judge down"), FATAL),
            (DriverError("no prompt"), FATAL),
            (TimeoutError("slow"), TRANSIENT),
            (ConnectionResetError("reset"), TRANSIENT),
            (OSError("disk"), FATAL),
        ],
    )
    def test_rampart_and_python_errors_are_infrastructure(
        self, error: BaseException, kind: FailureKind
    ) -> None:
        failure = classify_failure(error)
        assert (failure.kind, failure.infrastructure) == (kind, True)
        assert failure.source is error

    def test_other_rampart_errors_and_bugs_are_not(self) -> None:
        for error in (SchemaError("bad record"), ValueError("bug"), KeyError("k")):
            assert _read(error) == (FATAL, False, "")

    def test_an_os_error_with_a_client_status_stays_infrastructure(self) -> None:
        """urllib's ``HTTPError`` is an ``OSError``: the boundary always made it ERROR."""

        class HTTPError(OSError):
            code = status = 404

        assert _read(HTTPError("not found")) == (FATAL, True, "HTTP 404")

    def test_status_forms(self) -> None:
        class Status(enum.IntEnum):
            TOO_MANY = 429

        for status in (429, HTTPStatus.TOO_MANY_REQUESTS, Status.TOO_MANY):
            error = HTTPStatusError("x", response=HTTPResponse(0))
            error.response.status_code = status
            assert classify_failure(error).status == 429
            assert type(classify_failure(error).status) is int


class TestRealClients:
    """The real classes, built as the clients build them."""

    def test_openai_and_anthropic(self) -> None:
        import anthropic
        import openai

        request = _sdk_request(openai)
        http = sdk_http(openai)
        cases = [
            (
                openai.RateLimitError(
                    "Error code: 429",
                    response=http.Response(429, headers={"retry-after": "2"}, request=request),
                    body=None,
                ),
                RATE_LIMITED,
                "openai.RateLimitError",
            ),
            (
                openai.InternalServerError(
                    "boom", response=http.Response(500, request=request), body=None
                ),
                TRANSIENT,
                "openai.InternalServerError",
            ),
            (openai.APIConnectionError(request=request), TRANSIENT, "openai.APIConnectionError"),
            (openai.APITimeoutError(request=request), TRANSIENT, "openai.APITimeoutError"),
            (
                anthropic.RateLimitError(
                    "429", response=http.Response(429, request=request), body=None
                ),
                RATE_LIMITED,
                "anthropic.RateLimitError",
            ),
            (
                anthropic.InternalServerError(
                    "overloaded", response=http.Response(529, request=request), body=None
                ),
                TRANSIENT,
                "anthropic.InternalServerError",
            ),
            (anthropic.APITimeoutError(request=request), TRANSIENT, "anthropic.APITimeoutError"),
        ]
        for error, kind, label in cases:
            failure = classify_failure(error)
            assert (failure.kind, failure.infrastructure) == (kind, True), label
            assert failure.source is not None
            assert type_label(type(failure.source)) == label
        first = classify_failure(cases[0][0])
        assert first.headers == (("retry-after", "2"),)

    def test_agent_framework_wrapping_openai(self) -> None:
        import openai
        from agent_framework.exceptions import ChatClientException as RealChatClientException

        request = _sdk_request(openai)
        http = sdk_http(openai)
        limited = openai.RateLimitError(
            "Error code: 429",
            response=http.Response(429, headers={"retry-after-ms": "250"}, request=request),
            body=None,
        )
        try:
            try:
                raise limited
            except openai.RateLimitError as error:
                raise RealChatClientException(
                    f"service failed to complete the prompt: {error}", inner_exception=error
                ) from error
        except RealChatClientException as outer:
            failure = classify_failure(outer)
        assert (failure.kind, failure.infrastructure, failure.status) == (RATE_LIMITED, True, 429)
        assert failure.describe() == (
            "rate limited (HTTP 429, openai.RateLimitError wrapped in "
            "agent_framework.ChatClientException)"
        )
        assert failure.headers == (("retry-after-ms", "250"),)

    def test_httpx_and_aiohttp(self) -> None:
        import aiohttp
        import httpx
        from multidict import CIMultiDict, CIMultiDictProxy
        from yarl import URL

        request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
        answer = httpx.Response(429, headers={"Retry-After": "3"}, request=request)
        status_error = httpx.HTTPStatusError("429", request=request, response=answer)
        assert _read(status_error) == (RATE_LIMITED, True, "rate limited")
        assert classify_failure(status_error).headers == (("retry-after", "3"),)
        assert _read(httpx.ConnectError("refused", request=request))[:2] == (TRANSIENT, True)
        assert _read(httpx.ReadTimeout("slow", request=request)) == (TRANSIENT, True, "timed out")
        assert _read(httpx.RemoteProtocolError("dropped", request=request))[:2] == (
            TRANSIENT,
            True,
        )
        info = aiohttp.RequestInfo(
            URL("http://127.0.0.1/"), "POST", CIMultiDictProxy(CIMultiDict()), URL("http://x/")
        )
        refused = aiohttp.ClientResponseError(
            info, (), status=429, headers=CIMultiDictProxy(CIMultiDict({"Retry-After": "4"}))
        )
        assert classify_failure(refused).headers == (("retry-after", "4"),)
        assert _read(refused)[0] is RATE_LIMITED
        assert _read(aiohttp.ServerDisconnectedError())[:2] == (TRANSIENT, True)
        assert _read(aiohttp.ServerTimeoutError())[:2] == (TRANSIENT, True)


def _sdk_request(sdk: Any) -> Any:
    http = sdk_http(sdk)
    return http.Request("POST", "https://api.openai.com/v1/chat/completions")


def _handling_a_429(handler: Callable[[Exception], BaseException]) -> BaseException:
    """What ``handler(error)`` raises inside the ``except`` that caught a 429."""
    try:
        try:
            raise rate_limit_error()
        except Exception as error:
            raise handler(error)  # noqa: B904 - the implicit chain under test
    except BaseException as outer:
        return outer


class TestChains:
    def test_explicit_cause(self) -> None:
        assert _read(wrapped(APITimeoutError())) == (TRANSIENT, True, "timed out")

    def test_implicit_context(self) -> None:
        class ServiceError(Exception):
            pass

        failure = classify_failure(_handling_a_429(lambda error: ServiceError(str(error))))
        assert (failure.kind, failure.infrastructure) == (RATE_LIMITED, True)
        assert failure.describe().endswith("wrapped in tests.ServiceError)")

    def test_suppressed_context_is_not_followed(self) -> None:
        class ServiceError(Exception):
            pass

        def unrelated(error: Exception) -> BaseException:
            replaced = ServiceError("unrelated")
            replaced.__suppress_context__ = True  # raise ... from None
            return replaced

        outer = _handling_a_429(unrelated)
        assert isinstance(outer.__context__, Exception)
        assert _read(outer) == (FATAL, False, "")

    def test_inner_exception_in_args(self) -> None:
        """Agent Framework's ``inner_exception`` is found even when raised outside the
        ``except`` that caught it (no cause, no context)."""
        outer = ChatClientException("failed", rate_limit_error())
        assert outer.__cause__ is None
        assert outer.__context__ is None
        assert _read(outer)[:2] == (RATE_LIMITED, True)

    @pytest.mark.parametrize(
        "bug", [KeyError("retry"), TypeError("x"), AttributeError("y"), AssertionError()]
    )
    def test_a_bug_raised_while_handling_a_429_is_a_bug(self, bug: Exception) -> None:
        assert _read(_handling_a_429(lambda error: bug)) == (FATAL, False, "")

    def test_a_client_error_inside_stops_the_chain(self) -> None:
        inner = BadRequestError("bad", response=HTTPResponse(400))
        assert _read(wrapped(inner)) == (FATAL, False, "HTTP 400")

    def test_deep_wrapping(self) -> None:
        error: Exception = rate_limit_error()
        for _ in range(MAX_LINKS - 2):
            error = wrapped(error)
        assert classify_failure(error).kind is RATE_LIMITED
        assert len(classify_failure(error).wrappers) == MAX_LINKS - 2
        for _ in range(4):
            error = wrapped(error)
        assert _read(error) == (FATAL, False, "")  # past MAX_LINKS: not read

    def test_cycles_end(self) -> None:
        first, second = ChatClientException("a"), ChatClientException("b")
        first.__cause__, second.__cause__ = second, first
        assert _read(first) == (FATAL, False, "")


class TestGroups:
    def test_single_member_reads_as_it(self) -> None:
        failure = classify_failure(ExceptionGroup("one", [wrapped(rate_limit_error())]))
        assert failure.kind is RATE_LIMITED
        assert failure.wrappers == ("agent_framework.ChatClientException", "ExceptionGroup")

    def test_every_member_infrastructure(self) -> None:
        group = ExceptionGroup("calls", [APITimeoutError(), rate_limit_error(), TimeoutError()])
        assert _read(group) == (RATE_LIMITED, True, "rate limited")
        transient = ExceptionGroup("calls", [APITimeoutError(), ConnectError("x")])
        assert _read(transient) == (TRANSIENT, True, "timed out")
        fatal = ExceptionGroup("calls", [rate_limit_error(), InfrastructureError("401")])
        assert _read(fatal)[:2] == (FATAL, True)

    def test_a_bug_among_them_propagates(self) -> None:
        group = ExceptionGroup("calls", [rate_limit_error(), ValueError("bug")])
        assert _read(group)[:2] == (FATAL, False)

    def test_nested_and_wrapped_groups(self) -> None:
        inner = ExceptionGroup("inner", [rate_limit_error(), APITimeoutError()])
        outer = wrapped(
            ExceptionGroup("outer", [inner, InternalServerError("x", response=HTTPResponse(502))])
        )  # type: ignore[arg-type]
        assert _read(outer)[:2] == (RATE_LIMITED, True)

    def test_too_many_members_are_not_read(self) -> None:
        group = ExceptionGroup("many", [APITimeoutError() for _ in range(MAX_LEAVES + 1)])
        assert _read(group)[:2] == (FATAL, False)

    def test_deep_nesting_ends(self) -> None:
        error: BaseException = rate_limit_error()
        for _ in range(200):
            error = ExceptionGroup("nest", [error])  # type: ignore[list-item]
        assert _read(error)[:2] == (FATAL, False)


class _Raises:
    def __get__(self, instance: object, owner: type | None = None) -> Any:
        raise RuntimeError("hostile attribute")


class _EvilClass:
    """Its ``__class__`` raises: even ``isinstance`` on it raises."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        raise RuntimeError("no class")


class _EvilInt(int):
    def __index__(self) -> int:
        raise RuntimeError("no index")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no eq")

    __hash__ = int.__hash__


class TestHostile:
    """Whatever an exception holds, reading it never raises."""

    def test_attributes_that_raise(self) -> None:
        class Hostile(Exception):
            status_code = _Raises()
            status = _Raises()
            response = _Raises()
            headers = _Raises()
            args = _Raises()  # type: ignore[assignment]
            request = _Raises()

        assert _read(Hostile()) == (FATAL, False, "")
        assert failed_requests(Hostile()) == ()

    def test_chain_attributes_that_raise(self) -> None:
        class Hostile(Exception):
            __cause__ = _Raises()  # type: ignore[assignment]
            __context__ = _Raises()  # type: ignore[assignment]

        assert _read(Hostile()) == (FATAL, False, "")
        assert failed_requests(Hostile()) == ()

    @pytest.mark.parametrize(
        "status",
        # Factories: pytest itself would trip over an object whose __class__ raises.
        [
            lambda: "429",
            lambda: 429.0,
            lambda: True,
            lambda: None,
            object,
            _EvilClass,
            lambda: -1,
            lambda: 10**100,
            lambda: [429],
        ],
        ids=["str", "float", "bool", "none", "object", "evil-class", "negative", "huge", "list"],
    )
    def test_weird_statuses_are_no_status(self, status: Any) -> None:
        error = HTTPStatusError("x", response=HTTPResponse(0))
        error.response.status_code = status()
        assert _read(error) == (FATAL, False, "")

    def test_an_int_subclass_is_read_without_its_methods(self) -> None:
        error = HTTPStatusError("x", response=HTTPResponse(0))
        error.response.status_code = _EvilInt(429)
        assert classify_failure(error).status == 429

    @pytest.mark.parametrize(
        "headers",
        [
            lambda: None,
            lambda: "Retry-After: 2",
            lambda: 42,
            _EvilClass,
            lambda: [("Retry-After",)],
            lambda: [(b"retry-after", b"5")],
            lambda: [("retry-after", "1" * 100_000)],
            lambda: [(_EvilClass(), "1")],
        ],
        ids=["none", "str", "int", "evil-class", "short-pair", "bytes", "huge-value", "evil-name"],
    )
    def test_weird_headers_still_read_the_status(self, headers: Any) -> None:
        error = HTTPStatusError("x", response=HTTPResponse(429))
        error.response.headers = headers()
        failure = classify_failure(error)
        assert (failure.kind, failure.infrastructure, failure.status) == (RATE_LIMITED, True, 429)
        assert failure.headers in ((), (("retry-after", "5"),))

    def test_headers_that_break_midway_keep_what_was_read(self) -> None:
        class Breaking:
            def items(self) -> Any:
                yield ("Retry-After", "3")
                raise RuntimeError("broken")

        error = HTTPStatusError("x", response=HTTPResponse(429))
        error.response.headers = Breaking()  # type: ignore[assignment]
        assert classify_failure(error).headers == (("retry-after", "3"),)

    def test_endless_headers_are_bounded(self) -> None:
        class Endless:
            def items(self) -> Any:
                return itertools.repeat(("x-ratelimit-remaining-requests", "0"))

        error = HTTPStatusError("x", response=HTTPResponse(429))
        error.response.headers = Endless()  # type: ignore[assignment]
        assert len(classify_failure(error).headers) == 256

    def test_a_class_whose_mro_cannot_be_read(self) -> None:
        class Meta(type):
            __mro__ = _Raises()  # type: ignore[assignment]

        class Odd(Exception, metaclass=Meta):
            pass

        assert _read(Odd()) == (FATAL, False, "")

    def test_str_is_never_called(self) -> None:
        class Mute(APITimeoutError):
            def __str__(self) -> str:
                raise RuntimeError("no text")

        failure = classify_failure(Mute())
        assert failure.describe() == "timed out (tests.Mute)"

    @settings(max_examples=200, deadline=None)
    @given(
        st.dictionaries(
            st.sampled_from(["status_code", "status", "response", "headers", "args", "request"]),
            st.one_of(
                st.integers(),
                st.text(max_size=8),
                st.binary(max_size=8),
                st.none(),
                st.booleans(),
                st.floats(allow_nan=True),
                st.lists(st.tuples(st.text(max_size=12), st.text(max_size=12)), max_size=4),
                st.builds(lambda: _EvilClass()),
                st.builds(lambda: HTTPResponse(429, {"Retry-After": "1"})),
            ),
        )
    )
    def test_never_raises(self, attributes: dict[str, object]) -> None:
        error = Exception("x")
        for name, value in attributes.items():
            if name == "args":
                continue  # BaseException.args only takes tuples
            setattr(error, name, value)
        failure = classify_failure(error)
        assert isinstance(failure, Failure)
        assert isinstance(failure.describe(), str)
        assert isinstance(failed_requests(error), tuple)


class TestTypeLabel:
    def test_labels(self) -> None:
        class Local(Exception):
            __module__ = "openai._exceptions"

        class Oddly(Exception):
            pass

        Oddly.__module__ = 42  # type: ignore[assignment]
        assert type_label(KeyError) == "KeyError"
        assert type_label(RateLimitedError) == "RateLimitedError"
        assert type_label(Local) == "openai.Local"
        assert type_label(Oddly) == "Oddly"
