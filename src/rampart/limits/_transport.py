"""``LimitedTransport`` / ``LimitedSyncTransport``: the limiter under an agent's model client.

The rate limit an agent under test runs into is usually its model API's, and the agent
calls that API through its own SDK client, which rampart's ``limit(adapter)`` never
sees (it sees one ``send_async`` per turn; the agent makes several model calls per
turn). Every SDK worth naming talks httpx and takes an httpx client: give it one whose
transport is this, and each HTTP request goes through the run's limiter of ``name``
exactly as an adapter's sends do (``rampart.limits._shell.Limiter``): slot, pause,
token (fixed or learned rate, fleet-wide through the same backends), the answer's
rate-limit headers learned from, statistics in the report.

**Retried at the request level.** A ``429``, and a ``503``, means the request was not
processed, so sending the same bytes again is safe. Both are retried within the
limiter's budget (``Retry-After`` honoured, a 503 with a wait is a rate limit, a bare
503 an outage); nothing else is: any other status goes back to the SDK as it came,
and a failure of the exchange itself (a refused connection, a timeout: the request may
have been processed) propagates unretried, for the SDK's own error handling. A refusal
that outlasts the budget is handed back to the SDK as the ``429``/``503`` response it
is (its body kept, up to ``MAX_REFUSAL_BYTES``), so the SDK raises its own
``RateLimitError``, which its callers (and rampart's error boundary) understand.

**Bodies.** A request whose body is bytes (every JSON call an SDK makes; a body read
into memory) is sent again as is. A streamed upload (a generator) cannot be: it gets
one attempt, still paced, and its refusal goes back to the SDK. Answers pass through
untouched, streamed ones (SSE) included: an attempt ends when the answer's headers
arrive, and the SDK reads the body after that.

**Tool calls seen.** Inside a rampart execution, the transport also reads the tool
calls the traffic shows (``rampart.codec._wire_calls``): those a JSON answer asks for,
and those a request answers (the agent ran them), and reports them to the execution
(``rampart._seen_calls``), whose error boundary judges them if the agent then fails
before its turn's answer. To read an answer it reads the body (a JSON answer only, never
a streamed one) and hands the SDK an answer with the same status, headers and bytes.

**The sync transport** serves a synchronous SDK client used from a worker thread
(``anyio.to_thread.run_sync``) of the event loop that runs the test. The limiter lives
in that event loop: each request goes there (``anyio.from_thread.run``), waits its turn,
and its HTTP exchange runs in a worker thread of that loop's own, so the thread that
asked only blocks. Called from any other thread it uses the event loop it was made in,
if that one still runs; without one (or on the event loop's own thread, where blocking
would stall the loop) it raises ``RuntimeError`` saying so.

**httpx or httpx2.** Some SDKs moved to ``httpx2``, httpx's successor with the same
API under another name (the Anthropic SDK 2.x refuses an ``httpx`` client). A transport
serves the client it is given either way: it answers in the module its requests come
from (``_http``), and makes its default inner transport from it on the first request.

The inner transport defaults to what rampart's own HTTP clients use: aiohttp's
(``httpx-aiohttp``) on asyncio, several small httpcore pools on trio
(``rampart._http``), ``httpx.HTTPTransport`` for the sync one; under an
``httpx2`` client, ``httpx2``'s own. This module imports httpx: ``rampart.limits`` loads
it on first access of the transports.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any, final

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import httpx

from rampart import _seen_calls
from rampart._checks import invalid
from rampart._http._internal import DEFAULT_MAX_CONNECTIONS
from rampart._redact import redact
from rampart.codec._internal import answer_calls, request_calls
from rampart.core.errors import InfrastructureError
from rampart.limits._errors import RateLimitedError
from rampart.limits._policy._limiter_core import DEFAULT_MAX_RETRY_AFTER, DEFAULT_RETRY_BUDGET
from rampart.limits._registry import Bound
from rampart.limits._settings import check_settings
from rampart.limits._signals import (
    parse_rate_limit_headers,
    parse_retry_after,
    report_rate_limit_headers,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine

    from rampart.limits._backends import LimitBackend
    from rampart.limits._shell import Limiter
    from rampart.limits._stats import LimiterStatistics

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "IO_THREADS",
    "MAX_REFUSAL_BYTES",
    "LimitedSyncTransport",
    "LimitedTransport",
]

MAX_REFUSAL_BYTES = 1 << 20
"""The most of a refusal's body kept to hand back to the SDK; a longer body is dropped
(the refusal goes back with an empty one)."""

IO_THREADS = 100
"""Worker threads one event loop lends the sync transports' HTTP exchanges (a limiter
of their own: the threads that ask hold the loop's default ones)."""

_RETRIED = frozenset({429, 503})
_KEPT = frozenset({"http_version", "reason_phrase"})  # a refusal's extensions kept


class _Passthrough(Exception):
    """A failure of the exchange itself, carried through the limiter unretried (never a
    status, a retry header or a cause it could be classified by)."""

    def __init__(self, error: Exception) -> None:
        super().__init__("the HTTP exchange failed")
        self.error = error


Refusal = tuple[Exception, httpx.Response]
"""A refusal the limiter was told about, and the answer to hand back for it."""


def _where(request: httpx.Request) -> str:
    url = request.url
    port = "" if url.port is None else f":{url.port}"
    return redact(f"{request.method} {url.scheme}://{url.host}{port}{url.path}")


def _refusal(request: httpx.Request, kept: httpx.Response, refused: list[Refusal]) -> Exception:
    """The limiter's error for a 429 or 503 answer ``kept`` (with its body), remembered
    in ``refused`` with it: a 429, or a 503 with a wait, is a rate limit; a bare 503 an
    outage (transient)."""
    status = kept.status_code
    message = f"{_where(request)}: HTTP {status} {kept.reason_phrase}"
    retry_after = parse_retry_after(kept.headers)
    error: Exception
    if status == 429 or retry_after is not None:
        if retry_after is not None:
            message += f" (retry after {retry_after:g} s)"
        signal = parse_rate_limit_headers(kept.headers)
        error = RateLimitedError(message, retry_after=retry_after, signal=signal)
    else:
        error = InfrastructureError(message, transient=True)
    refused[:] = [(error, kept)]
    return error


def _http(request: httpx.Request) -> Any:
    """The module the request's client speaks: ``httpx``, or ``httpx2`` (same API)."""
    return sys.modules.get(type(request).__module__.partition(".")[0], httpx)


def _kept(request: httpx.Request, answer: httpx.Response, body: bytes | None) -> httpx.Response:
    """A refusal as the SDK will get it: its status and headers, and its raw body
    (``None``: too long, dropped with the headers that described it)."""
    http = _http(request)
    headers = answer.headers.copy()
    if body is None:
        for name in ("content-length", "content-encoding", "transfer-encoding"):
            headers.pop(name, None)
    extensions = {key: value for key, value in answer.extensions.items() if key in _KEPT}
    kept: httpx.Response = http.Response(
        answer.status_code,
        headers=headers,
        stream=http.ByteStream(b"" if body is None else body),
        request=request,
        extensions=extensions,
    )
    return kept


def _replayable(request: httpx.Request) -> bool:
    """Whether the request's body can be sent again (bytes, or read into memory)."""
    return isinstance(request.stream, _http(request).ByteStream)


def _owned(refused: list[Refusal], error: BaseException) -> httpx.Response | None:
    """The answer to hand back when the limiter gave up on our last refusal (``error``
    is it, or the error saying its ``Retry-After`` was too long)."""
    for raised, answer in refused:
        if error is raised or error.__cause__ is raised:
            return answer
    return None


class _Transport:
    """What both transports share: the settings and the name's limiter."""

    _bound: Bound

    def _settle(self, owner: str, arguments: dict[str, Any]) -> None:
        """Check the options among ``arguments`` (the constructor's ``locals()``)."""
        options = {key: value for key, value in arguments.items() if key in _OPTIONS}
        self._bound = Bound(check_settings(owner, **options), owner=owner)

    @property
    def name(self) -> str:
        return self._bound.settings.name

    @property
    def limiter(self) -> Limiter:
        """The run's limiter of ``name``."""
        return self._bound.limiter

    def statistics(self) -> LimiterStatistics:
        """The limiter's statistics (every user of the name in this process)."""
        return self._bound.limiter.statistics()


@final
class LimitedTransport(_Transport, httpx.AsyncBaseTransport):
    """An ``httpx.AsyncBaseTransport`` whose requests go through the limiter of ``name``:
    ``httpx.AsyncClient(transport=LimitedTransport(name="model", adaptive=True))``.

    Options are ``limit()``'s (``docs/limits.md``); ``name`` is required (the limiter,
    one per run, shared with every ``limit()`` and transport of the name).
    ``transport`` is the inner transport (default: the one rampart's HTTP clients use
    on the running event loop); it is closed with this one.
    """

    def __init__(
        self,
        transport: httpx.AsyncBaseTransport | None = None,
        *,
        name: str,
        max_concurrency: int | None = None,
        rate: float | None = None,
        burst: int | None = None,
        adaptive: bool = False,
        max_retries: int | None = None,
        retry_budget: float = DEFAULT_RETRY_BUDGET,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
        backend: LimitBackend | None = None,
    ) -> None:
        owner = "LimitedTransport"
        if transport is not None and not callable(getattr(transport, "handle_async_request", None)):
            raise invalid(owner, "transport", "an httpx (or httpx2) AsyncBaseTransport", transport)
        self._settle(owner, locals())
        self._inner = transport

    def __repr__(self) -> str:
        return f"LimitedTransport({self._inner!r}, name={self.name!r})"

    @property
    def transport(self) -> httpx.AsyncBaseTransport | None:
        """The inner transport (``None``: the default, not made yet)."""
        return self._inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        inner = self._inner
        if inner is None:  # made in the running event loop, which picks it
            inner = self._inner = _default_async_transport(_http(request))
        refused: list[Refusal] = []

        async def attempt() -> httpx.Response:
            failure: Exception | None = None
            try:
                answer = await inner.handle_async_request(request)
            except Exception as error:
                failure = error
            if failure is not None:
                raise _Passthrough(failure)  # outside the handler: no context to read
            if answer.status_code in _RETRIED:
                kept = _kept(request, answer, await _read_async(answer))
                raise _refusal(request, kept, refused)
            report_rate_limit_headers(answer.headers)
            return answer

        watched = _watch_request(request)
        answer = await _limited(self.limiter.call, attempt, request, refused)
        if watched and _json_answer(answer):
            answer = _watch_answer(request, answer, await _read_all_async(answer))
        return answer

    async def aclose(self) -> None:
        if self._inner is not None:
            await self._inner.aclose()


@final
class LimitedSyncTransport(_Transport, httpx.BaseTransport):
    """An ``httpx.BaseTransport`` whose requests go through the limiter of ``name``, for
    a synchronous SDK client called from worker threads of the run's event loop:
    ``httpx.Client(transport=LimitedSyncTransport(name="model", adaptive=True))``.

    Options as for ``LimitedTransport``; ``transport`` defaults to an
    ``httpx.HTTPTransport``.
    """

    def __init__(
        self,
        transport: httpx.BaseTransport | None = None,
        *,
        name: str,
        max_concurrency: int | None = None,
        rate: float | None = None,
        burst: int | None = None,
        adaptive: bool = False,
        max_retries: int | None = None,
        retry_budget: float = DEFAULT_RETRY_BUDGET,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
        backend: LimitBackend | None = None,
    ) -> None:
        owner = "LimitedSyncTransport"
        if transport is not None and not callable(getattr(transport, "handle_request", None)):
            raise invalid(owner, "transport", "an httpx (or httpx2) BaseTransport", transport)
        self._settle(owner, locals())
        self._inner = transport
        self._making = threading.Lock()
        try:  # the event loop it is made in: the way back from threads anyio did not start
            self._token: anyio.lowlevel.EventLoopToken | None = anyio.lowlevel.current_token()
        except anyio.NoEventLoopError:
            self._token = None

    def __repr__(self) -> str:
        return f"LimitedSyncTransport({self._inner!r}, name={self.name!r})"

    @property
    def transport(self) -> httpx.BaseTransport | None:
        """The inner transport (``None``: the default, not made yet)."""
        return self._inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        inner = self._inner
        if inner is None:
            with self._making:  # threads race here: a second inner would never be closed
                inner = self._inner
                if inner is None:
                    inner = self._inner = _default_sync_transport(_http(request))
        refused: list[Refusal] = []

        def exchange() -> tuple[httpx.Response, httpx.Response | None]:
            failure: Exception | None = None
            try:
                answer = inner.handle_request(request)
            except Exception as error:
                failure = error
            if failure is not None:
                raise _Passthrough(failure)
            if answer.status_code in _RETRIED:
                return answer, _kept(request, answer, _read_sync(answer))
            return answer, None

        async def attempt() -> httpx.Response:
            answer, kept = await anyio.to_thread.run_sync(exchange, limiter=_io_threads())
            if kept is not None:
                raise _refusal(request, kept, refused)
            report_rate_limit_headers(answer.headers)
            return answer

        async def run() -> httpx.Response:
            return await _limited(self.limiter.call, attempt, request, refused)

        watched = _watch_request(request)
        answer = self._in_event_loop(run)
        if watched and _json_answer(answer):
            answer = _watch_answer(request, answer, _read_all_sync(answer))
        return answer

    def _in_event_loop(
        self, run: Callable[[], Coroutine[Any, Any, httpx.Response]]
    ) -> httpx.Response:
        if _on_event_loop():
            raise RuntimeError(
                "LimitedSyncTransport: a synchronous request on the event loop's own thread "
                "would block the loop (and the limiter it waits for); call the sync client "
                "from a worker thread (anyio.to_thread.run_sync), or use the async client "
                "with LimitedTransport"
            )
        try:
            return anyio.from_thread.run(run)
        except anyio.NoEventLoopError:
            pass  # not an anyio worker thread: the loop it was made in, if any
        if self._token is not None:
            try:
                return anyio.from_thread.run(run, token=self._token)
            except anyio.RunFinishedError:
                pass
        raise RuntimeError(
            "LimitedSyncTransport: no running event loop to reach the limiter "
            f"{self.name!r} from this thread; call the sync client from a worker thread "
            "of the event loop that runs the test (anyio.to_thread.run_sync), or make the "
            "transport inside that event loop"
        )

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()


_OPTIONS = frozenset(
    {
        "name",
        "max_concurrency",
        "rate",
        "burst",
        "adaptive",
        "max_retries",
        "retry_budget",
        "max_retry_after",
        "backend",
    }
)


async def _limited(
    call: Callable[..., Awaitable[httpx.Response]],
    attempt: Callable[[], Awaitable[httpx.Response]],
    request: httpx.Request,
    refused: list[Refusal],
) -> httpx.Response:
    """``attempt`` through the limiter; a refusal that outlasted the budget comes back
    as the response it was, an exchange's own failure as the error it was."""
    failure: Exception | None = None
    try:
        return await call(attempt, retry=_replayable(request))
    except _Passthrough as carried:
        failure = carried.error
    except InfrastructureError as error:
        answer = _owned(refused, error)
        if answer is None:
            raise
        return answer
    assert failure is not None
    raise failure  # outside the handler: the SDK sees the exception it would have seen


def _watch_request(request: httpx.Request) -> bool:
    """Report the calls ``request`` answers or repeats, if an execution listens; whether
    it does (then the answer is read too)."""
    if not _seen_calls.listening():
        return False
    if _replayable(request):
        _seen_calls.report(request_calls(request.content))
    return True


def _json_answer(answer: httpx.Response) -> bool:
    content_type = answer.headers.get("content-type", "")
    return answer.status_code == 200 and content_type.startswith("application/json")


def _watch_answer(request: httpx.Request, answer: httpx.Response, raw: bytes) -> httpx.Response:
    """Report the calls the answer (its raw body ``raw``) asks for; the answer to hand
    the SDK instead, with the same status, headers and bytes."""
    http = _http(request)
    decoded: httpx.Response = http.Response(
        200, headers=answer.headers, stream=http.ByteStream(raw)
    )
    _seen_calls.report(answer_calls(decoded.read()))
    return _kept(request, answer, raw)


async def _read_all_async(answer: httpx.Response) -> bytes:
    try:
        return b"".join([chunk async for chunk in answer.aiter_raw()])
    finally:
        await answer.aclose()


def _read_all_sync(answer: httpx.Response) -> bytes:
    try:
        return b"".join(answer.iter_raw())
    finally:
        answer.close()


async def _read_async(answer: httpx.Response) -> bytes | None:
    """A refusal's raw body, at most ``MAX_REFUSAL_BYTES`` (``None``: longer); closed."""
    kept: list[bytes] = []
    size = 0
    try:
        async for chunk in answer.aiter_raw():
            size += len(chunk)
            if size > MAX_REFUSAL_BYTES:
                return None
            kept.append(chunk)
    finally:
        await answer.aclose()
    return b"".join(kept)


def _read_sync(answer: httpx.Response) -> bytes | None:
    kept: list[bytes] = []
    size = 0
    try:
        for chunk in answer.iter_raw():
            size += len(chunk)
            if size > MAX_REFUSAL_BYTES:
                return None
            kept.append(chunk)
    finally:
        answer.close()
    return b"".join(kept)


_IO_LIMITER: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = anyio.lowlevel.RunVar(
    "rampart.limits sync transport threads"
)


def _io_threads() -> anyio.CapacityLimiter:
    """The running event loop's threads for the sync transports' exchanges."""
    try:
        return _IO_LIMITER.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(IO_THREADS)
        _IO_LIMITER.set(limiter)
        return limiter


def _on_event_loop() -> bool:
    import sniffio

    try:
        sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return False
    return True


def _default_async_transport(http: Any) -> httpx.AsyncBaseTransport:
    """What rampart's own clients use on the running event loop (see
    ``rampart._http``); under an httpx2 client, httpx2's own."""
    if http is not httpx:
        made: httpx.AsyncBaseTransport = http.AsyncHTTPTransport(limits=_limits(http))
        return made
    from rampart._http import ShardedTransport, choose_transport, default_ssl_context

    verify = default_ssl_context(True)
    kind = choose_transport(http2=False)
    if kind == "aiohttp":
        from rampart._http._internal import jarless_transport

        return jarless_transport(max_connections=DEFAULT_MAX_CONNECTIONS, verify=verify)
    if kind == "sharded":
        return ShardedTransport(max_connections=DEFAULT_MAX_CONNECTIONS, verify=verify)
    return httpx.AsyncHTTPTransport(verify=verify, limits=_limits(httpx))


def _default_sync_transport(http: Any) -> httpx.BaseTransport:
    if http is not httpx:
        made: httpx.BaseTransport = http.HTTPTransport(limits=_limits(http))
        return made
    from rampart._http import default_ssl_context

    verify = default_ssl_context(True)
    return httpx.HTTPTransport(verify=verify, limits=_limits(httpx))


def _limits(http: Any) -> httpx.Limits:
    limits: httpx.Limits = http.Limits(
        max_connections=DEFAULT_MAX_CONNECTIONS, max_keepalive_connections=DEFAULT_MAX_CONNECTIONS
    )
    return limits
