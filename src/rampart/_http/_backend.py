"""httpcore's anyio network backend, without a cancel scope around an untimed read or write.

httpcore wraps every read and write of a connection in a cancel scope
(``fail_after(timeout)``), even when the timeout is ``None``, plus a context manager that
maps exceptions. On trio a scope's deadline is registered with the run loop as it
opens and closes, and an HTTP exchange makes several: a cProfile of
``benchmarks/bench_http.py`` on trio at 200 in flight showed about eight scopes per
request, about a seventh of the client's CPU; without the per-read and per-write ones
the direct path's CPU per request fell by 5-8 % (interleaved runs).

Here a read or write given no timeout calls the anyio stream directly and maps its
errors with an ``except`` clause (free when nothing is raised); one given a timeout
keeps httpcore's own code, so a caller's per-operation timeouts still fire.
The sharded client's direct path (``rampart.adapters._sharded``) sends its requests with
no per-operation timeout, because ``rampart.adapters._http.post_json`` bounds the whole
exchange with one scope of its own. Connecting and the TLS handshake are httpcore's
anyio backend's, unchanged (its errors map onto httpcore's as the trio backend's do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import httpcore
from httpcore._backends.anyio import AnyIOStream  # its timed paths, reused as they are
from httpcore._utils import is_socket_readable

if TYPE_CHECKING:
    import ssl
    from collections.abc import Iterable

__all__ = ["LeanBackend"]

_CLOSED = (anyio.BrokenResourceError, anyio.ClosedResourceError)


class _LeanStream(AnyIOStream):
    """httpcore's anyio stream; an untimed read or write opens no cancel scope, and
    whether the connection is readable is asked of its socket, found once (anyio builds
    its table of attributes on every lookup, and httpcore asks for every idle
    connection of a pool, about ten times per request)."""

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        super().__init__(stream)
        self._socket = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return is_socket_readable(self._socket)
        return super().get_extra_info(info)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        if timeout is not None:
            return await super().read(max_bytes, timeout)
        try:
            return await self._stream.receive(max_bytes=max_bytes)
        except anyio.EndOfStream:
            return b""
        except _CLOSED as exc:
            raise httpcore.ReadError(exc) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        if timeout is not None:
            await super().write(buffer, timeout)
            return
        if not buffer:
            return
        try:
            await self._stream.send(item=buffer)
        except _CLOSED as exc:
            raise httpcore.WriteError(exc) from exc

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
    ) -> httpcore.AsyncNetworkStream:
        tls = await super().start_tls(ssl_context, server_hostname, timeout)
        assert isinstance(tls, AnyIOStream)
        return _LeanStream(tls._stream)


class LeanBackend(httpcore.AnyIOBackend):
    """httpcore's anyio backend whose streams are ``_LeanStream`` (see the module
    docstring); it runs on asyncio and trio alike."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await super().connect_tcp(host, port, timeout, local_address, socket_options)
        assert isinstance(stream, AnyIOStream)
        return _LeanStream(stream._stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await super().connect_unix_socket(path, timeout, socket_options)
        assert isinstance(stream, AnyIOStream)
        return _LeanStream(stream._stream)
