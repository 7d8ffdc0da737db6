"""httpx-aiohttp's transport without a cookie jar (``httpx-aiohttp``, asyncio only).

Imported only when that transport is chosen (``choose_transport``), since
``httpx-aiohttp`` comes with the ``http`` and ``llm`` extras. httpx-aiohttp's transport
opens an ``aiohttp.ClientSession`` with aiohttp's default cookie jar; this one opens it
with ``DummyCookieJar``, with the same connector settings. The adapters' client
(``rampart.adapters._aiohttp.AiohttpClient``) and the rate-limited transport
(``rampart.limits.LimitedTransport``) both use it.
"""

from __future__ import annotations

import functools
from typing import Any

import aiohttp
import httpx
from httpx_aiohttp.transport import AiohttpTransport

__all__ = ["jarless", "jarless_transport"]


def _session(transport: AiohttpTransport) -> aiohttp.ClientSession:
    """The session httpx-aiohttp would open for ``transport``, without a cookie jar."""
    limit = transport.limits.max_connections
    connector = aiohttp.TCPConnector(
        limit=0 if limit is None else limit,  # httpx's None and aiohttp's 0: no bound
        keepalive_timeout=transport.limits.keepalive_expiry,
        ssl=transport.ssl_context,
    )
    return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())


def jarless(transport: httpx.AsyncBaseTransport) -> httpx.AsyncBaseTransport:
    """``transport`` opening its aiohttp session without a cookie jar."""
    if isinstance(transport, AiohttpTransport) and transport.client is None:
        # Called on the transport's first request, inside the running event loop.
        transport.client = functools.partial(_session, transport)
    return transport


def jarless_transport(*, max_connections: int, verify: Any) -> httpx.AsyncBaseTransport:
    """httpx-aiohttp's transport as ``AiohttpClient`` uses it (no cookie jar), for an
    ``httpx.AsyncClient`` someone else makes (``rampart.limits.LimitedTransport``)."""
    limits = httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections
    )
    return jarless(AiohttpTransport(verify=verify, limits=limits))
