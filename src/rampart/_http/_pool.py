"""The connection pool's default size, for every HTTP client rampart makes.

On the ground floor with the transport choice, in a module of its own (no imports,
so importing it loads no httpx): the adapters, the LLM client and the real-agent
transport (``rampart.limits._transport``) share one number without importing each
other.
"""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_CONNECTIONS"]

DEFAULT_MAX_CONNECTIONS = 1000
"""Connections an HTTP client of rampart's may open when none is given (the adapters',
the LLM client's and the real-agent transport's): the OpenAI SDK's own default. The
run's concurrency and rate limiter, not the pool, bound what is in flight; an idle
pool slot costs nothing, while a pool smaller than what is in flight queues requests
in the client (100 halved the throughput of 200 in flight)."""
