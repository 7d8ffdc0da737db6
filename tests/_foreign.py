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

import importlib
import json
from collections.abc import Iterator, Mapping
from types import ModuleType


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


class HTTPRequest:
    """The ``request`` an SDK error (and its ``response``) carries: its body built in
    memory, ``content``."""

    def __init__(self, content: bytes) -> None:
        self.content = content


class HTTPResponse:
    """The ``response`` an SDK error carries (and the ``request`` it answered)."""

    def __init__(
        self,
        status_code: int,
        headers: Mapping[str, str] | None = None,
        request: HTTPRequest | None = None,
    ) -> None:
        self.status_code = status_code
        self.headers = Headers(headers)
        self.request = request


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
        self.request = response.request


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


def rate_limit_error(
    retry_after: str | None = None, *, request: bytes | None = None
) -> RateLimitError:
    """An OpenAI-shaped 429, with ``Retry-After`` when given, and the body of the
    request it refused when given."""
    headers = {"x-request-id": "req_1", "x-ratelimit-remaining-requests": "0"}
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    refused = None if request is None else HTTPRequest(request)
    return RateLimitError(
        "Error code: 429 - {'error': {'message': 'Rate limit reached'}}",
        response=HTTPResponse(429, headers, refused),
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


#: A tool the agent ran: its call id, name, arguments and the result it sent back.
Ran = tuple[str, str, dict[str, object], str]


def chat_request(*ran: Ran, prompt: str = "Process ticket T-7.") -> bytes:
    """A chat-completions request body as the OpenAI SDK sends it after the agent ran
    ``ran``: the whole conversation resent, each call and its ``tool`` result."""
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You are a helpdesk agent."},
        {"role": "user", "content": prompt},
    ]
    for call_id, name, arguments, result in ran:
        function = {"name": name, "arguments": json.dumps(arguments)}
        call = {"id": call_id, "type": "function", "function": function}
        messages.append({"role": "assistant", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    return json.dumps({"model": "gpt-x", "messages": messages, "tools": []}).encode()


def responses_request(*ran: Ran, chained: bool, prompt: str = "Process ticket T-7.") -> bytes:
    """A Responses API request body after the agent ran ``ran``: chained
    (``previous_response_id``, as Agent Framework sends), only the last result; else
    the whole input, each ``function_call`` and its ``function_call_output``."""
    items: list[dict[str, object]] = []
    for call_id, name, arguments, result in ran:
        call = {"type": "function_call", "call_id": call_id, "name": name}
        items.append({**call, "arguments": json.dumps(arguments)})
        items.append({"type": "function_call_output", "call_id": call_id, "output": result})
    if chained:
        body: dict[str, object] = {"input": items[-1:], "previous_response_id": "resp_1"}
    else:
        body = {"input": [{"role": "user", "content": prompt}, *items], "store": False}
    return json.dumps({"model": "gpt-x", **body, "tools": []}).encode()


def sdk_http(sdk: ModuleType) -> ModuleType:
    """The httpx module an SDK (``openai``, ``anthropic``) builds its requests with:
    httpx, or the fork it ships (``httpx2``)."""
    exceptions = importlib.import_module(f"{sdk.__name__}._exceptions")
    for name in ("httpx", "httpx2"):
        module = getattr(exceptions, name, None)
        if isinstance(module, ModuleType):
            return module
    raise AssertionError(f"{sdk.__name__} builds requests with no httpx we know")
