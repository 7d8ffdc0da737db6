"""``ChatCompletionsAdapter``: an agent reached over an OpenAI-compatible HTTP API.

The adapter owns one ``httpx.AsyncClient`` (created with the first session, shared by
every session, closed by ``aclose()`` or ``async with adapter``). httpx is imported
only then, so importing ``rampart.adapters`` stays light. A session keeps the
conversation (the ``messages`` list) and appends a turn only after the server
answered, so a failed request can be sent again unchanged.

Failures map onto rampart's error classes so a rate limiter can tell them apart
(``rampart.adapters._http``, shared with the LLM client in ``rampart.llm``):

* ``429`` and ``503`` -> ``rampart.limits.RateLimitedError`` with ``retry_after``
  read from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date);
* any other ``5xx``, a refused or dropped connection, a timeout ->
  ``InfrastructureError(transient=True)``;
* any other non-2xx status -> ``InfrastructureError`` naming the status;
* a 2xx body that is not a chat completion -> ``MalformedResponseError`` naming the
  JSON path that is wrong.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from urllib.parse import unquote, urlsplit, urlunsplit

from anyio.lowlevel import RunVar

from rampart._checks import (
    check_bool,
    check_instance,
    check_int,
    check_optional_instance,
    check_optional_secret,
    check_optional_text,
    check_seconds,
    check_text,
    describe,
    invalid,
)
from rampart._http._internal import DEFAULT_MAX_CONNECTIONS
from rampart._redact import (
    Masked,
    Secret,
    header_secrets,
    is_secret_header,
    redact,
    register_header_secret,
    register_secret,
    register_url_secrets,
)
from rampart.adapters._documents import render_user_content
from rampart.adapters._http import ClientUsers, close_client, new_client, post_json
from rampart.adapters._parse import parse_completion
from rampart.adapters._session import GuardedSession
from rampart.core.manifest import AppManifest
from rampart.core.types import ObservabilityLevel, Request, Response

if TYPE_CHECKING:
    from types import TracebackType

    import httpx

__all__ = ["ChatCompletionsAdapter", "ChatCompletionsSession", "SeedSpec"]

_OWNER = "ChatCompletionsAdapter"
_RESERVED_BODY_KEYS = frozenset({"model", "messages", "seed", "stream"})
_BASE_URL = "an http:// or https:// URL such as 'http://127.0.0.1:8000/v1'"

SeedSpec = int | Callable[[], int | None] | None
"""A fixed request ``seed``, a function called once per new session, or none."""


def _url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as a base URL, if anything. (A function of its own, so
    no parsed URL, which shows its password, stays in a frame a traceback prints.)"""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return _BASE_URL
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        return f"{_BASE_URL}, without a query or fragment"
    return None


def _check_base_url(value: object) -> str:
    url = check_text(_OWNER, "base_url", value)
    problem = _url_problem(url)
    if problem is not None:
        raise invalid(_OWNER, "base_url", problem, url, error=ValueError, shown=repr(redact(url)))
    return url.rstrip("/")


def _split_user_info(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without user info, and the (user, password) pair it held, decoded."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.netloc.rpartition("@")[2]
    pair = (Secret(unquote(parts.username or "")), Secret(unquote(parts.password or "")))
    return urlunsplit(parts._replace(netloc=host)), pair


def _check_secret_headers(value: object) -> tuple[str, ...]:
    expected = "an iterable of header names (str), or None"
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise invalid(_OWNER, "secret_headers", expected, value)
    names = tuple(value)
    for index, name in enumerate(names):
        if not isinstance(name, str) or not name.strip():
            raise invalid(_OWNER, f"secret_headers[{index}]", "a non-empty str", name)
    return names


def _check_headers(value: object) -> dict[str, str]:
    if value is None:
        return {}
    # Header values may be credentials: messages show the header name, never its value.
    if not isinstance(value, Mapping):
        raise invalid(_OWNER, "headers", "a mapping of str to str", value, secret=True)
    headers: dict[str, str] = {}
    for key, item in value.items():
        name = f"headers[{describe(key)}]"
        if not isinstance(key, str) or not key.strip():
            raise invalid(_OWNER, "headers", "a mapping with non-empty str names", key, shown=name)
        if not isinstance(item, str):
            raise invalid(_OWNER, name, "a str", item, secret=True)
        if any(char in key + item for char in "\r\n"):
            raise invalid(_OWNER, name, "free of line breaks", item, error=ValueError, secret=True)
        headers[key] = item
    return headers


def _check_extra_body(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise invalid(_OWNER, "extra_body", "a mapping with str keys", value, secret=True)
    reserved = sorted(_RESERVED_BODY_KEYS & set(value))
    if reserved:
        raise invalid(
            _OWNER,
            "extra_body",
            "free of model, messages, seed and stream (the adapter sets them; use seed=)",
            value,
            error=ValueError,
            shown=f"keys {', '.join(reserved)}",
        )
    try:
        json.dumps(dict(value), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise invalid(
            _OWNER, "extra_body", "JSON-serialisable", value, error=ValueError, shown=str(exc)
        ) from None
    return dict(value)


_T = TypeVar("_T")


def _hidden(value: _T, kind: type[str]) -> _T:
    """``value`` (a str, or a mapping's str values) as ``kind``, whose ``repr`` hides it."""
    if isinstance(value, str):
        return cast("_T", kind(value))
    if isinstance(value, Mapping):
        try:
            return cast(
                "_T",
                {key: kind(item) if isinstance(item, str) else item for key, item in value.items()},
            )
        except Exception:  # a broken mapping: _check_headers reports it
            return value
    return value


def _check_seed(value: object) -> SeedSpec:
    if value is None or callable(value):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(_OWNER, "seed", "an int, a function returning an int or None, or None", value)
    return value


class ChatCompletionsAdapter:
    """An ``AgentAdapter`` for any server speaking OpenAI's ``POST /chat/completions``.

    ``base_url`` is the API root (``http://127.0.0.1:8000/v1``); requests go to
    ``{base_url}/chat/completions`` with ``model``. ``headers`` are sent with every
    request; ``api_key`` is shorthand for ``Authorization: Bearer <api_key>``.
    The api key, the values of secret headers (``Authorization``, ``api-key``,
    ``x-api-key`` and the others in ``rampart._redact.SECRET_HEADERS``, plus the names
    in ``secret_headers``) and a password in ``base_url`` are registered with the
    redaction policy: no message, summary, report or trace shows them, even when the
    server echoes them (``docs/secrets.md``).
    ``timeout`` bounds each request end to end (connect, send, wait, read).
    ``observability`` defaults to ``TOOL_ONLY``: the API reports tool calls but not
    side effects. ``manifest`` defaults to ``AppManifest(name=model)``.
    ``system_prompt`` opens every conversation. ``extra_body`` is merged into every
    request body (``temperature``, ``tools``, ...). ``seed`` is sent as the request's
    ``seed`` field: an int, or a function called once per new session (e.g. one that
    reads the current trial index), so seeded servers answer reproducibly.
    ``max_connections`` sizes the connection pool; ``max_response_bytes`` caps a
    response body; ``trust_env`` lets httpx read proxy settings from the environment;
    ``http2`` speaks HTTP/2 (negotiated over https, prior knowledge over http; needs
    ``h2``), which multiplexes many concurrent requests over one connection.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        headers: Mapping[str, str] | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        observability: ObservabilityLevel = ObservabilityLevel.TOOL_ONLY,
        manifest: AppManifest | None = None,
        system_prompt: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
        seed: SeedSpec = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_response_bytes: int = 8 * 1024 * 1024,
        trust_env: bool = True,
        http2: bool = False,
        secret_headers: Iterable[str] | None = None,
    ) -> None:
        # Credentials are rebound first: a traceback shows this frame's arguments.
        base_url, api_key = _hidden(base_url, Masked), _hidden(api_key, Secret)
        headers = _hidden(headers, Secret)
        self._base_url = Masked(_check_base_url(base_url))
        # Credentials in the URL's user info are sent as Basic authentication, as httpx
        # would; they are kept out of the URL httpx sees, whose request objects print
        # the URL whole (in tracebacks of connection errors, for one).
        root, self._auth = _split_user_info(self._base_url)
        self._endpoint = f"{root}/chat/completions"
        self._model = check_text(_OWNER, "model", model)
        self._secret_headers = _check_secret_headers(secret_headers)
        self._headers = _check_headers(headers)
        # A rejected key may still be a real secret: the message shows only its type.
        key = check_optional_secret(_OWNER, "api_key", api_key)
        if key is not None:
            if any(name.lower() == "authorization" for name in self._headers):
                raise ValueError(
                    f"{_OWNER}: give either api_key or an Authorization header, not both"
                )
            self._headers["Authorization"] = Secret(f"Bearer {key}")
        self._secrets = self._register_secrets(key)
        self._timeout = check_seconds(_OWNER, "timeout", timeout, positive=True)
        self._observability = check_instance(
            _OWNER,
            "observability",
            observability,
            ObservabilityLevel,
            expected="an ObservabilityLevel",
        )
        manifest = check_optional_instance(
            _OWNER, "manifest", manifest, AppManifest, expected="an AppManifest"
        )
        self._manifest = manifest if manifest is not None else AppManifest(name=self._model)
        self._system_prompt = check_optional_text(_OWNER, "system_prompt", system_prompt)
        self._extra_body = _check_extra_body(extra_body)
        self._seed = _check_seed(seed)
        self._max_connections = check_int(_OWNER, "max_connections", max_connections, minimum=1)
        self._max_response_bytes = check_int(
            _OWNER, "max_response_bytes", max_response_bytes, minimum=1
        )
        self._trust_env = check_bool(_OWNER, "trust_env", trust_env)
        self._http2 = check_bool(_OWNER, "http2", http2)
        if http2 and importlib.util.find_spec("h2") is None:
            raise ValueError(
                f"{_OWNER}: http2=True needs the 'h2' package (pip install 'httpx[http2]')"
            )
        self._client: httpx.AsyncClient | None = None
        # Requests in flight per client: ``aclose`` while some are in flight (one trial
        # clone's fixture teardown while other clones still send) leaves that client to
        # the last of them to close, so no request fails because another task closed.
        self._users = ClientUsers()
        # Marks the event loop that owns ``_client`` (an httpx pool is loop-bound).
        self._client_loop: RunVar[bool] = RunVar(f"rampart.adapters.client.{id(self)}")
        self._sessions_created = 0

    def __repr__(self) -> str:
        return f"ChatCompletionsAdapter(base_url={self._base_url!r}, model={self._model!r})"

    def _register_secrets(self, api_key: str | None) -> tuple[Secret, ...]:
        """Register this adapter's credentials with the redaction policy; they are also
        passed with each request, so even a short one is masked in that answer."""
        register_url_secrets(self._base_url)
        secrets: list[Secret] = []
        if api_key is not None:
            register_secret(api_key)
            secrets.append(Secret(api_key))
        for name, value in self._headers.items():
            if is_secret_header(name, self._secret_headers):
                register_header_secret(value)
                secrets.extend(Secret(item) for item in header_secrets(value))
        return tuple(secrets)

    @property
    def manifest(self) -> AppManifest:
        return self._manifest

    @property
    def observability_profile(self) -> ObservabilityLevel:
        return self._observability

    @property
    def base_url(self) -> str:
        return self._base_url

    @property
    def endpoint(self) -> str:
        """The URL requests are posted to (without user info: that is sent as Basic
        authentication)."""
        return self._endpoint

    @property
    def model(self) -> str:
        return self._model

    @property
    def timeout(self) -> float:
        return self._timeout

    @property
    def system_prompt(self) -> str | None:
        return self._system_prompt

    @property
    def closed(self) -> bool:
        """Whether no HTTP client is open (none created yet, or closed by ``aclose``)."""
        return self._client is None

    async def create_session_async(self) -> ChatCompletionsSession:
        index = self._sessions_created
        self._sessions_created += 1
        seed = self._seed() if callable(self._seed) else self._seed
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise invalid(_OWNER, "the seed function's result", "an int or None", seed)
        # Open the client now, not in the first send: importing httpx and building its
        # SSL context blocks the event loop for a few hundred milliseconds, and inside a
        # rate limiter's send that happens after tokens were taken, so the requests they
        # paid for go out late and bunched (429s from a server with the same burst).
        self._http_client()
        return ChatCompletionsSession(adapter=self, index=index, seed=seed)

    async def aclose(self) -> None:
        """Close the HTTP client; the next request opens a new one. Idempotent.

        Requests already in flight on it finish first: the last of them closes it.
        """
        client, self._client = self._client, None
        if client is not None and self._users.idle(client):
            await client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _http_client(self) -> httpx.AsyncClient:
        if self._client is not None:
            if not self._client_loop.get(False):
                raise RuntimeError(
                    f"{_OWNER}: its HTTP client was opened in another event loop; use one "
                    "adapter per event loop, or `await adapter.aclose()` before the loop ends"
                )
            return self._client
        self._client = new_client(
            url=self._endpoint,
            headers=self._headers,
            auth=self._auth,
            timeout=self._timeout,
            max_connections=self._max_connections,
            trust_env=self._trust_env,
            http2=self._http2,
        )
        self._client_loop.set(True)
        return self._client

    async def _post(self, body: dict[str, Any]) -> tuple[Response, dict[str, Any]]:
        """Send one completion request; the parsed response and the assistant message."""
        client = self._http_client()
        self._users.enter(client)
        try:
            data = await post_json(
                client,
                self._endpoint,
                body,
                time_limit=self._timeout,
                max_response_bytes=self._max_response_bytes,
                redact=self._secrets,
            )
        finally:
            # The last request on a client that aclose() detached meanwhile closes it.
            if self._users.leave(client) and client is not self._client:
                await close_client(client)
        return parse_completion(data)


class ChatCompletionsSession(GuardedSession):
    """One conversation: the messages so far, replayed with every request.

    Use it inside ``async with``; one request at a time (a second concurrent
    ``send_async`` raises ``RuntimeError``). ``messages`` is a copy of the history.
    """

    __slots__ = ("_adapter", "_busy", "_messages", "seed")

    def __init__(self, *, adapter: ChatCompletionsAdapter, index: int, seed: int | None) -> None:
        super().__init__(index=index)
        self._adapter = adapter
        self.seed = seed
        """The ``seed`` sent with every request of this session, if any."""
        self._messages: list[dict[str, Any]] = []
        if adapter.system_prompt is not None:
            self._messages.append({"role": "system", "content": adapter.system_prompt})
        self._busy = False

    def __repr__(self) -> str:
        return f"ChatCompletionsSession(index={self.index}, messages={len(self._messages)})"

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation so far, as sent on the wire (a deep copy)."""
        copied: list[dict[str, Any]] = json.loads(json.dumps(self._messages))
        return copied

    async def send_async(self, request: Request) -> Response:
        self._check_send(request)
        if self._busy:
            raise RuntimeError(
                f"ChatCompletionsSession {self.index} is already sending; a conversation "
                "takes one request at a time"
            )
        adapter = self._adapter
        user = {"role": "user", "content": render_user_content(request)}
        body: dict[str, Any] = {
            **adapter._extra_body,
            "model": adapter.model,
            "messages": [*self._messages, user],
        }
        if self.seed is not None:
            body["seed"] = self.seed
        self._busy = True
        try:
            response, assistant = await adapter._post(body)
        finally:
            self._busy = False
        self._messages.append(user)
        self._messages.append(assistant)
        return response
