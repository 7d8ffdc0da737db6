"""HTTP transports: which one an ``httpx`` client of rampart's gets, on the ground floor.

The adapters' client (``rampart.adapters``), the LLM client (``rampart.llm``) and the
rate-limited transport (``rampart.limits.LimitedTransport``) all choose their transport
here, so none of them reaches into another for it. This module is the room's public
face; importing it imports httpx (the rooms above import it where a client is made).
Its internal face (``_internal``) hands on the pool's default size and
``_aiohttp.jarless_transport`` (httpx-aiohttp's transport without a cookie jar), which
is imported only when that transport is chosen.
"""

from rampart._http._transports import (
    SHARD_SIZE,
    TRANSPORT_ENV,
    TRANSPORTS,
    JarlessClient,
    Shard,
    ShardedClient,
    ShardedTransport,
    choose_transport,
    default_ssl_context,
    transport_failure,
)

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
