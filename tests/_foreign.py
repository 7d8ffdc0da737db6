"""Look-alikes of the failures agent SDKs and frameworks raise, without importing them.

Shaped like the real classes where rampart reads them: the OpenAI / Anthropic SDKs'
``APIStatusError`` family (``status_code``, and a ``response`` whose ``headers`` are
case-insensitive), their ``APIConnectionError`` / ``APITimeoutError`` (no status),
Agent Framework's ``ChatClientException`` (``raise ... from`` the SDK's error, with the
inner exception in ``args`` too), httpx's ``HTTPStatusError`` (``response.status_code``)
and aiohttp's ``ClientResponseError`` (``status`` and ``headers`` on the error). Each
class claims its library's module, so a summary names it as it would the real one
(``openai.RateLimitError``). Tests with the real classes import the SDKs themselves.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping


class Headers(Mapping[str, str]):
    """Case-insensitive header mapping (as httpx's ``Headers``)."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._values = {name.lower(): value for name, value in (values or {}).items()}

    def __getitem__(self, name: str) -> str:
        return self._values[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


class HTTPResponse:
    """The ``response`` an SDK error carries."""

    def __init__(self, status_code: int, headers: Mapping[str, str] | None = None) -> None:
        self.status_code = status_code
        self.headers = Headers(headers)


class APIError(Exception):
    __module__ = "openai._exceptions"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class APIStatusError(APIError):
    __module__ = "openai._exceptions"

    def __init__(self, message: str, *, response: HTTPResponse) -> None:
        super().__init__(message)
        self.response = response
        self.status_code = response.status_code


class RateLimitError(APIStatusError):
    __module__ = "openai._exceptions"


class InternalServerError(APIStatusError):
    __module__ = "openai._exceptions"


class BadRequestError(APIStatusError):
    __module__ = "openai._exceptions"


class APIConnectionError(APIError):
    __module__ = "openai._exceptions"

    def __init__(self, message: str = "Connection error.") -> None:
        super().__init__(message)


class APITimeoutError(APIConnectionError):
    __module__ = "openai._exceptions"

    def __init__(self) -> None:
        super().__init__("Request timed out.")


class ChatClientException(Exception):
    """Agent Framework's wrapper: the inner exception in ``args`` and as ``__cause__``."""

    __module__ = "agent_framework.exceptions"

    def __init__(self, message: str, inner_exception: Exception | None = None) -> None:
        if inner_exception is None:
            super().__init__(message)
        else:
            super().__init__(message, inner_exception)


class HTTPStatusError(Exception):
    __module__ = "httpx._exceptions"

    def __init__(self, message: str, *, response: HTTPResponse) -> None:
        super().__init__(message)
        self.response = response


class ConnectError(Exception):
    __module__ = "httpx._exceptions"


class ClientResponseError(Exception):
    """aiohttp's: ``status`` and ``headers`` on the error itself."""

    __module__ = "aiohttp.client_exceptions"

    def __init__(self, status: int, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(f"{status}, message='Too Many Requests'")
        self.status = status
        self.headers = Headers(headers)


def rate_limit_error(retry_after: str | None = None) -> RateLimitError:
    """An OpenAI-shaped 429, with ``Retry-After`` when given."""
    headers = {"x-request-id": "req_1", "x-ratelimit-remaining-requests": "0"}
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    return RateLimitError(
        "Error code: 429 - {'error': {'message': 'Rate limit reached'}}",
        response=HTTPResponse(429, headers),
    )


def wrapped(inner: Exception) -> ChatClientException:
    """``inner`` as Agent Framework raises it: ``raise ChatClientException(..., inner)
    from inner``, inside the ``except`` that caught it."""
    outer = ChatClientException(
        f"service failed to complete the prompt: {inner}", inner_exception=inner
    )
    outer.__context__ = inner
    outer.__cause__ = inner  # also sets __suppress_context__, as ``raise ... from`` does
    return outer
