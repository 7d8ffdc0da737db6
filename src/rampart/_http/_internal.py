"""The internal face of ``rampart._http``: what other rooms take from its private modules.

For the transports' parts a client of another room sizes or picks by hand: the
connection pool's default size and the cookie-less aiohttp transport (imported only when
that transport is chosen). What is not here comes from ``rampart._http`` itself; how the
face loads is in ``docs/architecture.md`` ("Internal faces").
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart._http._aiohttp import jarless, jarless_transport
    from rampart._http._pool import DEFAULT_MAX_CONNECTIONS

_FACE = {
    "jarless": "rampart._http._aiohttp",
    "jarless_transport": "rampart._http._aiohttp",
    "DEFAULT_MAX_CONNECTIONS": "rampart._http._pool",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _FACE, uncached=frozenset(_FACE))

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "jarless",
    "jarless_transport",
]
