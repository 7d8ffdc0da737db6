"""``RedisBackend``: one token bucket per key in Redis, shared by every host.

The reservation is one Lua script, so Redis runs the read-modify-write atomically.
``transact`` (the shared document of a learned rate) is an optimistic transaction:
one script reads the document and the server's clock, the update runs here, and a
second script stores the result only if the document is still the one that was read
(else the update runs again on the fresh document).
It measures time with the server's ``TIME`` (one clock for every host) unless the
backend was given a ``clock``. The synchronous redis-py client runs in a worker thread
(``anyio.to_thread``), which works on asyncio and trio alike; redis-py is imported
only when a ``RedisBackend`` is created (optional extra ``rampart[redis]``).
"""

from __future__ import annotations

import json
import urllib.parse
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from rampart._checks import check_callable, check_instance, check_text, invalid
from rampart._redact import Masked, redact, register_url_secrets
from rampart.core.errors import InfrastructureError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["RedisBackend"]

T = TypeVar("T")

DEFAULT_PREFIX = "rampart:limits:"

DOCUMENT_TTL_MS = 3_600_000
"""A learned-rate document expires after an hour without use."""

MAX_TRANSACT_ATTEMPTS = 100

_OWNER = "RedisBackend"
_URL = "a redis://, rediss:// or unix:// URL"

# KEYS[1] bucket hash; ARGV: rate, burst, now ('' = use the server's TIME).
# Returns {wait, now} in seconds as strings (Lua numbers would be truncated to integers).
_SCRIPT = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now
if ARGV[3] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
else
  now = tonumber(ARGV[3])
end
local state = redis.call('HMGET', KEYS[1], 'tokens', 'stamp')
local tokens = tonumber(state[1])
local stamp = tonumber(state[2])
if tokens == nil or stamp == nil then
  tokens = burst
else
  local elapsed = now - stamp
  if elapsed > 0 then
    tokens = math.min(burst, tokens + elapsed * rate)
  else
    tokens = math.min(burst, tokens)
  end
end
tokens = tokens - 1
local wait = 0
if tokens < 0 then
  wait = -tokens / rate
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens),
           'stamp', string.format('%.17g', now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 60000)
return {string.format('%.17g', wait), string.format('%.17g', now)}
"""


# KEYS[1] document; ARGV[1] now ('' = the server's TIME). Returns {document or '', now}.
_READ = """
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
else
  now = tonumber(ARGV[1])
end
local current = redis.call('GET', KEYS[1])
if current == false then current = '' end
return {current, string.format('%.17g', now)}
"""

# KEYS[1] document; ARGV: the document read ('' = none), the new one, TTL in ms.
# Stores the new document only if nobody changed it since it was read.
_COMPARE_AND_SET = """
local current = redis.call('GET', KEYS[1])
if current == false then current = '' end
if current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
"""


class RedisBackend:
    """Token buckets in Redis at ``url`` (``redis://host:port/db``), keyed ``prefix + key``.

    ``clock`` ``None`` uses the Redis server's clock, which every host shares; tests may
    pass their own. Connection and script errors raise ``InfrastructureError`` naming
    the URL, so affected trials become ERROR results. The URL's password (in its user
    info or a ``?password=`` parameter) is registered with the redaction policy and
    never shown: not in messages, ``description``, ``repr()`` or statistics.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        clock: Callable[[], float] | None = None,
    ) -> None:
        # Held as ``Masked`` from the start: a traceback shows this frame's arguments.
        url = Masked(url) if isinstance(url, str) else url
        url = Masked(check_text(_OWNER, "url", url, secret=True))
        register_url_secrets(url)
        if urllib.parse.urlsplit(url).scheme not in {"redis", "rediss", "unix"}:
            raise invalid(_OWNER, "url", _URL, url, error=ValueError, shown=repr(redact(url)))
        check_instance(_OWNER, "prefix", prefix, str, expected="a str")
        check_callable(
            _OWNER, "clock", clock, expected="a callable returning seconds", optional=True
        )
        try:
            import redis
        except ImportError:
            raise ImportError(
                "RedisBackend needs the optional dependency redis-py: pip install 'rampart[redis]'"
            ) from None
        self._url = url
        self._prefix = prefix
        self._clock = clock
        self._client: Any = redis.Redis.from_url(url)
        self._script: Any = self._client.register_script(_SCRIPT)
        self._read: Any = self._client.register_script(_READ)
        self._compare_and_set: Any = self._client.register_script(_COMPARE_AND_SET)
        self._errors: tuple[type[BaseException], ...] = (redis.exceptions.RedisError,)

    def __repr__(self) -> str:
        return f"RedisBackend({redact(self._url)!r}, prefix={self._prefix!r})"

    @property
    def description(self) -> str:
        return redact(self._url)

    @property
    def prefix(self) -> str:
        return self._prefix

    def reserve_now(self, key: str, *, rate: float, burst: int) -> float:
        """The blocking reservation (runs in a worker thread from ``acquire``)."""
        return self._reserve(key, rate=rate, burst=burst)[1]

    def _reserve(self, key: str, *, rate: float, burst: int) -> tuple[float, float]:
        """``(now, wait)``: the reservation and the clock reading it was made at."""
        now = "" if self._clock is None else repr(float(self._clock()))
        try:
            reply = self._script(keys=[self._prefix + key], args=[repr(rate), burst, now])
        except self._errors as error:
            raise InfrastructureError(
                redact(f"RedisBackend {self._url}: could not reserve a token for {key!r}: {error}")
            ) from error
        wait, stamp = (float(item) for item in reply)
        return stamp, wait

    async def acquire(self, key: str, *, rate: float, burst: int) -> float:
        check_text("RedisBackend.acquire", "key", key)
        return await anyio.to_thread.run_sync(self._reserve_call, key, rate, burst)

    def _reserve_call(self, key: str, rate: float, burst: int) -> float:
        return self.reserve_now(key, rate=rate, burst=burst)

    def document_key(self, key: str) -> str:
        """The Redis key of ``transact``'s document for ``key``."""
        return f"{self._prefix}state:{key}"

    def transact_now(
        self,
        key: str,
        update: Callable[[dict[str, Any] | None, float], tuple[dict[str, Any], T]],
    ) -> T:
        """The blocking ``transact`` (runs in a worker thread from ``transact``)."""
        name = self.document_key(key)
        for _ in range(MAX_TRANSACT_ATTEMPTS):
            now = "" if self._clock is None else repr(float(self._clock()))
            try:
                raw, stamp = self._read(keys=[name], args=[now])
                text = raw.decode() if isinstance(raw, bytes) else str(raw)
                document, result = update(_parse_document(text), float(stamp))
                stored = json.dumps(document, allow_nan=False)
                written = self._compare_and_set(keys=[name], args=[text, stored, DOCUMENT_TTL_MS])
            except self._errors as error:
                raise InfrastructureError(
                    f"RedisBackend {redact(self._url)}: could not update the shared "
                    f"state of {key!r}: {error}"
                ) from error
            if int(written) == 1:
                return result
        raise InfrastructureError(
            f"RedisBackend {redact(self._url)}: the shared state of {key!r} changed under "
            f"every one of {MAX_TRANSACT_ATTEMPTS} attempts to update it"
        )

    async def transact(
        self,
        key: str,
        update: Callable[[dict[str, Any] | None, float], tuple[dict[str, Any], T]],
    ) -> T:
        check_text("RedisBackend.transact", "key", key)
        return await anyio.to_thread.run_sync(self.transact_now, key, update)

    def close(self) -> None:
        """Close the client's pooled connections (optional; they close at exit anyway)."""
        self._client.close()


def _parse_document(text: str) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        document = json.loads(text)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None
