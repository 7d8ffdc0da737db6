"""The asyncio client: httpx's API over aiohttp (``httpx-aiohttp``), without cookie jars.

Imported only when that transport is chosen (``_transports.choose_transport``), since
``httpx-aiohttp`` comes with the ``http`` and ``llm`` extras. httpx-aiohttp's transport
opens an ``aiohttp.ClientSession`` with aiohttp's default cookie jar; this one opens it
with ``DummyCookieJar`` (the httpx side keeps none either: ``JarlessClient``), with the
same connector settings.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import aiohttp
from httpx_aiohttp import HttpxAiohttpClient
from httpx_aiohttp.transport import AiohttpTransport

from rampart.adapters._transports import JarlessClient

if TYPE_CHECKING:
    import httpx

__all__ = ["AiohttpClient"]


def _session(transport: AiohttpTransport) -> aiohttp.ClientSession:
    """The session httpx-aiohttp would open for ``transport``, without a cookie jar."""
    limit = transport.limits.max_connections
    connector = aiohttp.TCPConnector(
        limit=0 if limit is None else limit,  # httpx's None and aiohttp's 0: no bound
        keepalive_timeout=transport.limits.keepalive_expiry,
        ssl=transport.ssl_context,
    )
    return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())


def _jarless(transport: httpx.AsyncBaseTransport) -> httpx.AsyncBaseTransport:
    if isinstance(transport, AiohttpTransport) and transport.client is None:
        # Called on the transport's first request, inside the running event loop.
        transport.client = functools.partial(_session, transport)
    return transport


class AiohttpClient(JarlessClient, HttpxAiohttpClient):
    """httpx-aiohttp's client, keeping no cookies on either side."""

    def _init_transport(self, *args: Any, **kwargs: Any) -> httpx.AsyncBaseTransport:
        return _jarless(super()._init_transport(*args, **kwargs))

    def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> httpx.AsyncBaseTransport:
        return _jarless(super()._init_proxy_transport(*args, **kwargs))
