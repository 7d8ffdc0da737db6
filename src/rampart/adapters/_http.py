"""The HTTP exchange every chat-completions caller shares: post JSON, classify the answer.

``ChatCompletionsAdapter`` (an agent) and ``rampart.llm`` (judge, attacker and
generator models) talk to the same kind of endpoint, so they share this code: how
an ``httpx.AsyncClient`` is configured, how a body is posted and read (bounded), and
how a failure maps onto rampart's errors, which is what a rate limiter acts on:

* ``429`` and ``503`` with a wait -> ``rampart.limits.RateLimitedError`` with
  ``retry_after`` read from ``retry-after-ms`` / ``Retry-After`` and ``signal``, the
  answer's rate-limit headers (``rampart.limits.parse_rate_limit_headers``);
* any other ``5xx``, a refused or dropped connection, a timeout ->
  ``InfrastructureError(transient=True)``;
* any other non-2xx status -> ``InfrastructureError`` naming the status;
* an oversized body -> ``MalformedResponseError``;
* an origin that refused several connections and never answered -> an immediate
  ``InfrastructureError`` (not transient: no retry), ``rampart.adapters._reachability``.

The rate-limit headers of a 2xx answer (``x-ratelimit-*``, ``RateLimit``) are reported
to the limiter running the request, if any (``rampart.limits.report_rate_limit_headers``),
so a learned rate can follow what the agent says about its quota.

httpx is imported inside the functions, so importing this module stays light.
Messages never contain request headers, and every message goes through the
redaction policy (``rampart._redact``): URL credentials are masked, and registered
secrets plus the caller's ``redact`` values (the credentials this request carried,
which a server may echo in its error body) become ``[REDACTED]``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import anyio

from rampart._redact import REDACTED, Masked, Secret
from rampart._redact import redact as redact_text
from rampart.adapters import _reachability as reachability
from rampart.adapters._parse import error_detail, read_bounded
from rampart.adapters._retry_after import parse_retry_after
from rampart.core.errors import InfrastructureError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import httpx

__all__ = [
    "REDACTED",
    "ClientUsers",
    "Masked",
    "Secret",
    "close_client",
    "new_client",
    "post_json",
    "redact_text",
    "status_error",
]


class ClientUsers:
    """Who is using each HTTP client: its requests in flight (and holders), counted.

    A client shared by concurrent requests must not be closed under them (one trial
    clone's teardown while other clones still send), so its owner detaches it and the
    last user closes it. ``ChatCompletionsAdapter`` and the LLM endpoint both count
    their users here; each decides what "last" means for it.
    """

    __slots__ = ("_count",)

    def __init__(self) -> None:
        self._count: dict[httpx.AsyncClient, int] = {}

    def enter(self, client: httpx.AsyncClient) -> None:
        self._count[client] = self._count.get(client, 0) + 1

    def leave(self, client: httpx.AsyncClient) -> bool:
        """Count one user of ``client`` out; whether it was the last one."""
        left = self._count.pop(client) - 1
        if left:
            self._count[client] = left
        return not left

    def idle(self, client: httpx.AsyncClient) -> bool:
        return client not in self._count


async def close_client(client: httpx.AsyncClient) -> None:
    """Close ``client`` even inside a cancelled scope (its sockets must not leak)."""
    with anyio.CancelScope(shield=True):
        await client.aclose()


def new_client(
    *,
    url: str,
    headers: Mapping[str, str],
    timeout: float,
    max_connections: int,
    trust_env: bool,
    http2: bool,
    verify: Any = True,
    auth: tuple[str, str] | None = None,
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` configured the way rampart talks to chat endpoints.

    Its transport is chosen for the running event loop (``rampart._http``): aiohttp on
    asyncio when ``httpx-aiohttp`` is installed, else several small httpcore pools side
    by side; httpx's own single pool for ``http2``. Call it inside the event loop that
    will use the client.
    No redirects are followed (a redirected POST is a misconfiguration worth seeing),
    and no cookies are kept (``rampart._http.JarlessClient``).
    ``http2`` on an ``http://`` URL means prior knowledge (h2c), so HTTP/1.1 is off.
    ``auth`` is a (user, password) pair sent as Basic authentication.
    """
    import httpx

    from rampart import _http

    kind = _http.choose_transport(http2=http2)
    if verify is True:
        verify = _http.default_ssl_context(trust_env)
    client_class: type[httpx.AsyncClient] = _http.JarlessClient
    if kind == "aiohttp":
        from rampart.adapters._aiohttp import AiohttpClient

        client_class = AiohttpClient
    elif kind == "sharded":
        from rampart.adapters._sharded import DirectShardedClient

        client_class = DirectShardedClient
    return client_class(
        headers=dict(headers),
        timeout=httpx.Timeout(timeout),
        limits=httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        ),
        follow_redirects=False,
        trust_env=trust_env,
        http1=not (http2 and url.startswith("http://")),
        http2=http2,
        verify=verify,
        auth=auth,
    )


async def post_json(
    client: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    *,
    time_limit: float,
    max_response_bytes: int,
    headers: Mapping[str, str] | None = None,
    redact: Sequence[str] = (),
) -> bytes:
    """POST ``body`` as JSON; the 2xx response body, or the classified error.

    ``time_limit`` (seconds) bounds the whole exchange (connect, send, wait, read).
    """
    # Messages name the URL without its query string, which may carry a credential,
    # and without its user info. ``url`` itself may print in a traceback (pytest shows
    # this frame's arguments), so it is held as a ``Masked`` str.
    url = Masked(url)
    where = redact_text(f"POST {url.split('?', 1)[0]}", redact)
    reachability.check(url, where)
    try:
        with anyio.fail_after(time_limit):
            # The clients' direct paths (``_aiohttp.AiohttpClient.post_bytes``,
            # ``_sharded.DirectShardedClient.post_bytes``) skip httpx's models, which
            # cost as much CPU as the transport itself; this scope is their only time
            # limit.
            direct = getattr(client, "post_bytes", None)
            answer: tuple[int, dict[str, str], bytes] | None = None
            if direct is not None:
                answer = await direct(str(url), body, headers, limit=max_response_bytes)
            if answer is not None:
                status, reply_headers, data = answer
                del answer  # holds the body too, which the status error below drops
            else:
                async with client.stream("POST", _parsed(url), json=body, headers=headers) as reply:
                    status = reply.status_code
                    reply_headers = dict(reply.headers.items())
                    declared = reply.headers.get("content-length", "")
                    data = await read_bounded(declared, reply.aiter_bytes(), max_response_bytes)
    except Exception as exc:
        error = _transport_error(exc, where, time_limit, redact)
        if error is exc:
            raise
        if _never_connected(exc):
            reachability.refused(url)
        raise error from exc
    reachability.answered(url)
    if 200 <= status < 300:
        from rampart.limits import report_rate_limit_headers

        report_rate_limit_headers(reply_headers)
        return data
    error = status_error(where, status, reply_headers, data, redact=redact)
    # The raw body may echo a credential; keep it out of this frame's locals, which a
    # traceback printed with local variables (pytest --showlocals) would show.
    del data, reply_headers
    raise error


@functools.lru_cache(maxsize=64)
def _parsed(url: str) -> httpx.URL:
    """``url`` as httpx parses it, parsed once: every request of an adapter goes to the
    same URL, and httpx's pure-Python parser costs tens of microseconds per request.
    (An ``httpx.URL`` shows no password in its ``repr``; the cache is never printed.)"""
    import httpx

    return httpx.URL(str(url))


def _drop_frames(exc: BaseException) -> None:
    """Drop the frames of ``exc`` and of every exception it was raised from or while
    handling. aiohttp's frames hold the request's headers (credentials included) as
    local variables, which a traceback printed with locals (pytest ``--showlocals``)
    would show, and a time limit striking inside aiohttp chains its cancellation there:
    a transport failure keeps its types and messages, not its frames."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        link.__traceback__ = None
        link = link.__cause__ or link.__context__


def _never_connected(exc: Exception) -> bool:
    """Whether ``exc`` is a refused connection (nothing reached), on either transport."""
    import httpx

    from rampart._http import transport_failure

    failure = transport_failure(exc)
    if failure is not None:
        return failure[1] == "ConnectError"
    return isinstance(exc, httpx.ConnectError)


def _transport_error(
    exc: Exception, where: str, time_limit: float, redact: Sequence[str]
) -> Exception:
    """The rampart error for a failed exchange (no answer, or a broken one); ``exc``
    itself when it is no transport failure (a bug, or a ``MalformedResponseError``)."""
    import httpx

    from rampart._http import transport_failure

    failure = transport_failure(exc)
    if failure is not None:
        kind, shown = failure[0], f"{failure[1]}: {failure[2]}"
        _drop_frames(exc)
    elif isinstance(exc, TimeoutError | httpx.TimeoutException):
        kind, shown = "timeout", ""
        _drop_frames(exc)
    elif isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError | httpx.ProxyError):
        kind, shown = "connection", f"{type(exc).__name__}: {exc}"
    elif isinstance(exc, httpx.HTTPError):
        kind, shown = "other", f"{type(exc).__name__}: {exc}"
    else:
        return exc
    if kind == "timeout":
        return InfrastructureError(
            f"{where}: no complete response within the {time_limit:g} s timeout",
            transient=True,
        )
    if kind == "connection":
        message = f"{where}: connection failed ({shown})"
        return InfrastructureError(redact_text(message, redact), transient=True)
    message = f"{where}: request failed ({shown})"
    return InfrastructureError(redact_text(message, redact))


def status_error(
    where: str,
    status: int,
    headers: Mapping[str, str],
    data: bytes,
    *,
    redact: Sequence[str] = (),
) -> Exception:
    """The rampart error for a non-2xx answer (see the module docstring)."""
    from http import HTTPStatus

    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Unknown Status"
    message = redact_text(f"{where}: HTTP {status} {phrase}", redact)
    detail = redact_text(error_detail(data), redact)
    retry_after = parse_retry_after(headers) if status in (429, 503) else None
    # 429 always means "slow down". A 503 only does when it says when to come back;
    # a bare 503 is an outage (transient), and must not shrink an adaptive window.
    if status == 429 or retry_after is not None:
        from rampart.limits import RateLimitedError, parse_rate_limit_headers

        if retry_after is not None:
            message += f" (retry after {retry_after:g} s)"
        if detail:
            message += f": {detail}"
        signal = parse_rate_limit_headers(headers)
        return RateLimitedError(message, retry_after=retry_after, signal=signal)
    if detail:
        message += f": {detail}"
    return InfrastructureError(message, transient=500 <= status < 600)
