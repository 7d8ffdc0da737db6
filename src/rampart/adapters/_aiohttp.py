"""The asyncio client: httpx's API over aiohttp (``httpx-aiohttp``), without cookie jars,
and a direct path for rampart's own requests.

Imported only when that transport is chosen (``rampart._http.choose_transport``),
since ``httpx-aiohttp`` comes with the ``http`` and ``llm`` extras. Its transport keeps
no cookie jar (``rampart._http._aiohttp.jarless``; the httpx side keeps none either:
``JarlessClient``).

``AiohttpClient.post_bytes`` is what ``_http.post_json`` calls for every chat request:
the same aiohttp session, headers, authentication and timeouts, but no httpx request
and response models around it. Those models cost about as much CPU as aiohttp itself
(a cProfile of ``benchmarks/bench_http.py`` at 500 in flight: httpx and httpx-aiohttp
1.8 s of their own time against aiohttp's 1.9 s), which is what kept the client above
0.5 ms per request. Anything httpx must route itself (a proxy taken from the
environment) still goes through httpx.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import aiohttp
import httpx
import yarl
from httpx_aiohttp import HttpxAiohttpClient
from httpx_aiohttp.transport import AiohttpTransport

from rampart._http import JarlessClient
from rampart._http._internal import jarless
from rampart.adapters._parse import read_bounded

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["AiohttpClient"]

#: What the direct path reads at a time, as httpx-aiohttp's response stream does.
_CHUNK = 16 * 1024


class _Hidden(dict[str, str]):
    """Request headers whose ``repr`` shows only their names: they carry credentials, and
    a traceback printed with local variables (pytest ``--showlocals``) shows every frame's
    locals, this one's and aiohttp's (httpx's ``Headers`` masked ``Authorization`` the
    same way on the httpx path)."""

    def __repr__(self) -> str:
        return f"<headers {', '.join(self)}: values hidden>"


@functools.lru_cache(maxsize=64)
def _url(url: str) -> yarl.URL:
    """``url`` parsed once (every request of an adapter goes to the same URL)."""
    return yarl.URL(url)


class AiohttpClient(JarlessClient, HttpxAiohttpClient):
    """httpx-aiohttp's client, keeping no cookies on either side."""

    def _init_transport(self, *args: Any, **kwargs: Any) -> httpx.AsyncBaseTransport:
        return jarless(super()._init_transport(*args, **kwargs))

    def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> httpx.AsyncBaseTransport:
        return jarless(super()._init_proxy_transport(*args, **kwargs))

    async def post_bytes(
        self,
        url: str,
        body: Any,
        headers: Mapping[str, str] | None,
        *,
        limit: int,
    ) -> tuple[int, dict[str, str], bytes] | None:
        """POST ``body`` as JSON straight through aiohttp: the status, the answer's
        headers (lower-case names, repeated ones joined with ``", "`` as httpx joins
        them) and at most ``limit`` bytes of body (``_parse.read_bounded``); ``None``
        when httpx must send the request (``JarlessClient._direct_path_open``).

        What goes out is what httpx would send: the client's headers (but
        ``Accept-Encoding``, which aiohttp sets to what it decodes), its Basic
        authentication, ``headers``, and ``body`` as compact UTF-8 JSON."""
        transport = self._transport
        target = _url(url)
        if (
            not isinstance(transport, AiohttpTransport)
            or target.user is not None  # credentials in the URL: httpx's auth rule
            or not self._direct_path_open()
        ):
            return None
        session = transport.client
        if not isinstance(session, aiohttp.ClientSession):
            session = transport.client = transport.get_client()
        sent = self._direct_headers()
        if headers:
            sent.update(headers)
        timeout = self.timeout
        async with session.post(
            target,
            data=self._json_body(body),
            headers=sent,
            allow_redirects=False,
            timeout=aiohttp.ClientTimeout(
                sock_connect=timeout.connect, sock_read=timeout.read, connect=timeout.pool
            ),
        ) as reply:
            answer: dict[str, str] = {}
            for raw_name, raw_value in reply.raw_headers:
                name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
                answer[name] = f"{answer[name]}, {value}" if name in answer else value
            chunks = reply.content.iter_chunked(_CHUNK)
            data = await read_bounded(answer.get("content-length", ""), chunks, limit)
            return reply.status, answer, data

    def _direct_headers(self) -> _Hidden:
        """The client's own headers with its Basic authentication, as httpx would send
        them, read anew each time (they may change), minus ``Accept-Encoding``."""
        sent = _Hidden(
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in self.headers.raw
            if name.lower() != b"accept-encoding"
        )
        if isinstance(self._auth, httpx.BasicAuth):
            sent["Authorization"] = self._auth._auth_header
        sent["Content-Type"] = "application/json"
        return sent
