"""Which HTTP transport an ``httpx.AsyncClient`` gets, chosen by the running event loop.

httpx's own pool (httpcore 1.0) walks all its connections, and for each one all of
them again, on every request and every answer: fine for tens of connections, a
collapse at hundreds (measured: 15 % of the ideal throughput at 200 in flight, with
20-30 ms of client CPU per request). So rampart keeps httpx's API and picks the
transport underneath when a client is created:

* ``"aiohttp"`` (asyncio, when ``httpx-aiohttp`` is installed, as it is with the
  ``http`` and ``llm`` extras): aiohttp's connector, whose cost does not grow with the
  pool; the transport the OpenAI Python SDK offers for high concurrency.
* ``"sharded"`` (trio, or asyncio without aiohttp): httpcore pools side by side, each
  of at most ``SHARD_SIZE`` connections (one); a request goes to a pool with a free
  connection, and a new pool opens only when every open one is full. Each pool stays
  small, so its per-event walk stays cheap, and the number of pools follows what is in
  flight. h11 speaks the protocol, as before. rampart's own chat requests skip httpx's
  models and go straight to a pool (``rampart.adapters._sharded``), whose streams
  open no cancel scope for an untimed read or write (``_backend.LeanBackend``).
* ``"httpx"``: httpx's default transport, one pool. Chosen for ``http2=True`` (one
  multiplexed connection has no pool to walk) and on request.

Every client rampart makes keeps **no cookies** (``JarlessClient``): one client serves
every session and trial of an adapter, so a jar would carry the cookies one trial's
answers set (a server-side session, a load balancer's stickiness) into every other
trial's requests. A ``Cookie`` header the caller configures is still sent as given.
It is also cheaper: httpx reads every answer into its jar (``Cookies.extract_cookies``
wraps the request and answer for ``http.cookiejar``: tens of microseconds each), and on
asyncio aiohttp's session keeps a second jar of its own.

``RAMPART_HTTP_TRANSPORT`` (``auto``, ``aiohttp``, ``sharded`` or ``httpx``) overrides
the choice for every client created afterwards; ``aiohttp`` on trio falls back to
``sharded``, since aiohttp runs only on asyncio.

This module imports httpx: ``rampart.adapters._http`` imports it only when a client
is created.
"""

from __future__ import annotations

import functools
import http.cookiejar
import json
import os
import ssl
import sys
from typing import TYPE_CHECKING, Any, Final

import attrs
import httpcore
import httpx

from rampart._checks import invalid
from rampart._http._backend import LeanBackend

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = [
    "SHARD_SIZE",
    "TRANSPORTS",
    "TRANSPORT_ENV",
    "JarlessClient",
    "Shard",
    "ShardedClient",
    "ShardedTransport",
    "choose_transport",
    "default_ssl_context",
    "transport_failure",
]

TRANSPORT_ENV: Final = "RAMPART_HTTP_TRANSPORT"
TRANSPORTS: Final = ("auto", "aiohttp", "sharded", "httpx")
SHARD_SIZE: Final = 1
"""Connections per httpcore pool of the sharded transport. httpcore walks every
connection of a pool, and asks each idle one whether its socket is readable, on every
request and every answer, so one connection per pool is the cheapest: on trio at 200
and 400 in flight, 0.37-0.40 ms of client CPU per request against 0.40-0.46 ms with 4
(``benchmarks/bench_http.py``). A pool is a small object, opened only when a request
needs a connection."""


def default_ssl_context(trust_env: bool) -> ssl.SSLContext:
    """The verifying TLS context httpx would build for ``verify=True``, built once per
    process and setting: loading the CA bundle takes a few hundred milliseconds of
    blocked event loop, which every client and every pool would otherwise pay."""
    cert_file = os.environ.get("SSL_CERT_FILE", "") if trust_env else ""
    cert_dir = os.environ.get("SSL_CERT_DIR", "") if trust_env else ""
    return _ssl_context(trust_env, cert_file, cert_dir)


@functools.cache
def _ssl_context(trust_env: bool, cert_file: str, cert_dir: str) -> ssl.SSLContext:
    return httpx.create_ssl_context(trust_env=trust_env)


def _aiohttp_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("httpx_aiohttp") is not None


def _running_library() -> str | None:
    import sniffio

    try:
        return sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return None


def choose_transport(*, http2: bool) -> str:
    """``"aiohttp"``, ``"sharded"`` or ``"httpx"`` for a client created now (see the
    module docstring)."""
    wanted = os.environ.get(TRANSPORT_ENV, "").strip().lower() or "auto"
    if wanted not in TRANSPORTS:
        raise invalid(
            "rampart HTTP client",
            TRANSPORT_ENV,
            f"one of {', '.join(TRANSPORTS)}",
            wanted,
            error=ValueError,
        )
    if wanted == "httpx" or (wanted == "auto" and http2):
        return "httpx"
    if wanted == "sharded":
        return "sharded"
    if _running_library() == "asyncio" and _aiohttp_available():
        return "aiohttp"
    return "sharded"


def transport_failure(exc: BaseException) -> tuple[str, str, str] | None:
    """How a failure raised through the aiohttp transport reads, or ``None`` if it is
    not one: ``(kind, name, message)``.

    ``kind`` is ``"timeout"``, ``"connection"`` or ``"other"``; ``name`` is the httpx
    exception httpx's own transport raises for the same failure, so messages read alike
    on every transport; ``message`` is aiohttp's (for a response error only its message:
    its full text repeats the request URL). httpx-aiohttp maps aiohttp's errors onto
    httpx's, but maps every ``ClientConnectionError`` (a refused or dropped connection
    too) to ``ConnectTimeout`` and leaves some (a malformed status line or header:
    ``ClientResponseError``) unmapped, so this reads the aiohttp error itself (the
    mapped exception's ``__cause__``). aiohttp's ``ssl:default`` note is left out.
    """
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is None:
        return None
    cause = exc if isinstance(exc, aiohttp.ClientError) else exc.__cause__
    if not isinstance(cause, aiohttp.ClientError):
        return None
    message = str(cause)
    if isinstance(cause, aiohttp.ClientResponseError):
        message = cause.message
    # aiohttp names its TLS setting ("ssl:default") even for a plain http:// URL, where
    # it reads as if TLS were involved; the URL in the message says which it was.
    message = message.replace(" ssl:default", "")
    kinds: tuple[tuple[Any, str, str], ...] = (
        (TimeoutError, "timeout", "TimeoutException"),
        (aiohttp.ClientProxyConnectionError, "connection", "ProxyError"),
        (aiohttp.ClientHttpProxyError, "connection", "ProxyError"),
        (aiohttp.ClientConnectorError, "connection", "ConnectError"),
        (aiohttp.ServerDisconnectedError, "connection", "RemoteProtocolError"),
        (aiohttp.ClientPayloadError, "connection", "RemoteProtocolError"),
        (aiohttp.ClientResponseError, "connection", "RemoteProtocolError"),
        (aiohttp.ClientConnectionError, "connection", "NetworkError"),
    )
    for kind_class, kind, name in kinds:
        if isinstance(cause, kind_class):
            return kind, name, message
    return "other", type(cause).__name__, message


@attrs.define(eq=False)
class Shard:
    """One pool of a ``ShardedTransport``: httpx's transport and, for the direct path
    (``rampart.adapters._sharded``), the httpcore pool under it (``None`` if httpx
    ever stops keeping one there: the direct path then steps aside)."""

    transport: httpx.AsyncHTTPTransport
    pool: httpcore.AsyncConnectionPool | None
    size: int
    in_flight: int = 0
    closed: bool = False


class _CountedStream(httpx.AsyncByteStream):
    """A response body that gives its shard's slot back when it is closed (once)."""

    def __init__(self, inner: httpx.AsyncByteStream, owner: ShardedTransport, shard: Shard) -> None:
        self._inner = inner
        self._owner = owner
        self._shard: Shard | None = shard

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        shard, self._shard = self._shard, None
        if shard is not None:
            self._owner.release(shard)
        await self._inner.aclose()


class ShardedTransport(httpx.AsyncBaseTransport):
    """Several httpcore pools side by side (see the module docstring).

    At most ``max_connections`` connections in all, in pools of ``shard_size`` (the
    last one smaller). A request goes to a pool with a free connection (O(1): pools
    with room are kept on a stack); a new pool opens only when none has room; once all
    are open and full, a request waits in the least busy pool's queue.
    ``pool_options`` go to each ``httpx.AsyncHTTPTransport``.
    """

    def __init__(
        self, *, max_connections: int, shard_size: int | None = None, **pool_options: Any
    ) -> None:
        self._max_connections = max_connections
        self._shard_size = SHARD_SIZE if shard_size is None else shard_size
        self._pool_options = pool_options
        self._shards: list[Shard] = []
        self._room: list[Shard] = []  # pools with a free connection
        self._capacity = 0

    @property
    def shards(self) -> int:
        """How many pools are open."""
        return len(self._shards)

    def take(self) -> Shard:
        """A pool for one request (see the class docstring); give it back with
        ``release`` once its answer is closed."""
        if self._room:
            shard = self._room[-1]
        elif self._capacity < self._max_connections:
            size = min(self._shard_size, self._max_connections - self._capacity)
            limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
            pool = httpx.AsyncHTTPTransport(limits=limits, **self._pool_options)
            core = getattr(pool, "_pool", None)
            if isinstance(core, httpcore.AsyncConnectionPool):
                # Its streams open no cancel scope for an untimed read or write.
                core._network_backend = LeanBackend()
            else:
                core = None
            shard = Shard(transport=pool, pool=core, size=size)
            self._shards.append(shard)
            self._room.append(shard)
            self._capacity += size
        else:  # every connection busy: queue where the queue is shortest
            shard = min(self._shards, key=lambda shard: shard.in_flight)
            shard.in_flight += 1
            return shard
        shard.in_flight += 1
        if shard.in_flight == shard.size:
            self._room.pop()
        return shard

    def release(self, shard: Shard) -> None:
        """Give back the slot ``take`` handed out."""
        if shard.in_flight == shard.size and not shard.closed:
            self._room.append(shard)
        shard.in_flight -= 1

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        shard = self.take()
        try:
            response = await shard.transport.handle_async_request(request)
        except BaseException:
            self.release(shard)
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _CountedStream(response.stream, self, shard)
        return response

    async def aclose(self) -> None:
        shards, self._shards, self._room, self._capacity = self._shards, [], [], 0
        for shard in shards:
            shard.closed = True
            await shard.transport.aclose()


class _NullJar(http.cookiejar.CookieJar):
    """A cookie jar that stores nothing."""

    def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
        return None


class _NoCookies(httpx.Cookies):
    """An empty cookie store that stays empty; answers are not even read for cookies."""

    def __init__(self) -> None:
        super().__init__(_NullJar())

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


_NO_COOKIES: Final = _NoCookies()


class JarlessClient(httpx.AsyncClient):
    """An ``httpx.AsyncClient`` that keeps no cookies (see the module docstring):
    ``cookies`` is always empty, and setting it is refused."""

    @property
    def cookies(self) -> httpx.Cookies:
        return _NO_COOKIES

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        raise AttributeError("rampart's HTTP clients keep no cookies; send a Cookie header")

    def _direct_path_open(self) -> bool:
        """Whether a subclass's direct path (``post_bytes``) may send a request instead
        of httpx, as far as the client goes: no proxy mounts (httpx picks the transport),
        no authentication but Basic (which the direct paths send) and no event hooks
        (which only httpx calls). The URL and the transport are each path's own checks."""
        return (
            not self._mounts
            and (self._auth is None or isinstance(self._auth, httpx.BasicAuth))
            and not any(self._event_hooks.values())
        )

    @staticmethod
    def _json_body(body: Any) -> bytes:
        """``body`` encoded as httpx encodes ``json=``: compact UTF-8, no NaN."""
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


_DEFAULT_LIMITS: Final = httpx.Limits()


class ShardedClient(JarlessClient):
    """An ``httpx.AsyncClient`` whose transport is a ``ShardedTransport``.

    The transport is made in ``_init_transport`` (as ``httpx-aiohttp``'s client does)
    rather than passed as ``transport=``, because httpx ignores the environment's
    proxy settings when a transport is passed; this way ``trust_env`` keeps working
    (proxied origins go through httpx's own transport).
    """

    def _init_transport(
        self,
        verify: ssl.SSLContext | str | bool = True,
        cert: Any = None,
        trust_env: bool = True,
        http1: bool = True,
        http2: bool = False,
        limits: httpx.Limits = _DEFAULT_LIMITS,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> httpx.AsyncBaseTransport:
        if transport is not None:
            return transport
        if not isinstance(verify, ssl.SSLContext):
            # One context for every pool (see ``default_ssl_context``).
            verify = httpx.create_ssl_context(verify=verify, cert=cert, trust_env=trust_env)
            cert = None
        return ShardedTransport(
            max_connections=limits.max_connections or 100,
            verify=verify,
            cert=cert,
            trust_env=trust_env,
            http1=http1,
            http2=http2,
        )
