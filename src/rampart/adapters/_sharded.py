"""The sharded client (trio, or asyncio without aiohttp) with a direct path for rampart's
own requests.

``DirectShardedClient.post_bytes`` is what ``_http.post_json`` calls for every chat
request when the client's transport is ``rampart._http.ShardedTransport``: the request
goes straight to one of its httpcore pools, as ``AiohttpClient.post_bytes`` goes
straight to aiohttp, with the same headers, authentication and body httpx would send,
but without httpx's request and response models around it, and with no timeout per read
and write: ``post_json`` bounds the whole exchange with one cancel scope, which is the
time limit the caller asked for, so httpcore's scope around every read and write (with
the same limit, started later) could never strike first. On trio at 200 in flight
(``benchmarks/bench_http.py``, interleaved runs) skipping httpx's models took the
client from about 0.68 to 0.47 ms of CPU per request, and dropping the per-read and
per-write scopes (``rampart._http._backend``) to about 0.45 ms. Anything httpx must
route itself (a proxy from the environment) or authenticate itself still goes through
httpx.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import httpcore
import httpx

from rampart._http import ShardedClient, ShardedTransport
from rampart.adapters._parse import read_bounded

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

__all__ = ["DirectShardedClient"]

#: httpcore's errors, raised as httpx raises them (same name, same message), so a
#: failure reads alike on every path (``_http._transport_error``).
_HTTPCORE_ERRORS = (
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.ProxyError,
    httpcore.UnsupportedProtocol,
)


@functools.lru_cache(maxsize=64)
def _target(url: str) -> tuple[httpcore.URL, bytes] | None:
    """``url`` as httpcore takes it and its ``Host`` header, parsed once by httpx's
    parser (every request of an adapter goes to the same URL); ``None`` when it
    carries credentials (httpx's own authentication then applies)."""
    parsed = httpx.URL(url)
    if parsed.userinfo:
        return None
    core = httpcore.URL(
        scheme=parsed.raw_scheme,
        host=parsed.raw_host,
        port=parsed.port,
        target=parsed.raw_path,
    )
    return core, parsed.netloc


def _as_httpx(exc: Exception) -> httpx.HTTPError:
    """The httpx exception httpx's transport raises for httpcore's ``exc``."""
    error: type[httpx.HTTPError] = getattr(httpx, type(exc).__name__, httpx.TransportError)
    return error(str(exc))


async def _chunks(stream: Any) -> AsyncIterator[bytes]:
    """httpcore's body ``stream``, its failures raised as httpx's."""
    try:
        async for chunk in stream:
            yield chunk
    except _HTTPCORE_ERRORS as exc:
        raise _as_httpx(exc) from exc


class DirectShardedClient(ShardedClient):
    """``rampart._http.ShardedClient`` with the direct path (see the module docstring)."""

    async def post_bytes(
        self,
        url: str,
        body: Any,
        headers: Mapping[str, str] | None,
        *,
        limit: int,
    ) -> tuple[int, dict[str, str], bytes] | None:
        """POST ``body`` as JSON straight to an httpcore pool: the status, the answer's
        headers (lower-case names, repeated ones joined with ``", "`` as httpx joins
        them) and at most ``limit`` bytes of body, decoded as httpx decodes it
        (``_parse.read_bounded``); ``None`` when httpx must send the request.

        No read or write has a timeout of its own: the caller bounds the exchange
        (``_http.post_json``)."""
        transport = self._transport
        target = _target(url)
        if (
            target is None
            or not isinstance(transport, ShardedTransport)
            or not self._direct_path_open()
        ):
            return None
        shard = transport.take()
        try:
            pool = shard.pool
            if pool is None:
                return None
            content = self._json_body(body)
            request = httpcore.Request(
                b"POST",
                target[0],
                headers=self._raw_headers(target[1], headers, len(content)),
                content=content,
            )
            try:
                response = await pool.handle_async_request(request)
            except _HTTPCORE_ERRORS as exc:
                raise _as_httpx(exc) from exc
            try:
                return await _read(response, limit)
            finally:
                await response.aclose()
        finally:
            transport.release(shard)

    def _raw_headers(
        self, host: bytes, headers: Mapping[str, str] | None, length: int
    ) -> list[tuple[bytes, bytes]]:
        """What httpx would send, in its order: ``Host``, the client's headers updated
        with ``headers``, the body's length and type, its Basic authentication."""
        sent = httpx.Headers(self.headers)
        if headers:
            sent.update(headers)
        if "content-length" not in sent:
            sent["Content-Length"] = str(length)
        if "content-type" not in sent:
            sent["Content-Type"] = "application/json"
        if isinstance(self._auth, httpx.BasicAuth):
            sent["Authorization"] = self._auth._auth_header
        if "host" in sent:
            return sent.raw
        return [(b"Host", host), *sent.raw]


async def _read(response: httpcore.Response, limit: int) -> tuple[int, dict[str, str], bytes]:
    answer: dict[str, str] = {}
    encoded = False
    for raw_name, raw_value in response.headers:
        name = raw_name.decode("latin-1").lower()
        try:
            value = raw_value.decode()
        except UnicodeDecodeError:
            value = raw_value.decode("latin-1")
        answer[name] = f"{answer[name]}, {value}" if name in answer else value
        encoded = encoded or name == "content-encoding"
    declared = answer.get("content-length", "")
    if encoded:  # httpx's decoders, through its response model (rare on this path)
        reply = httpx.Response(response.status, headers=response.headers, stream=_Stream(response))
        data = await read_bounded(declared, reply.aiter_bytes(), limit)
    else:
        data = await read_bounded(declared, _chunks(response.stream), limit)
    return response.status, answer, data


class _Stream(httpx.AsyncByteStream):
    """httpcore's body as an httpx stream."""

    def __init__(self, response: httpcore.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in _chunks(self._response.stream):
            yield chunk
